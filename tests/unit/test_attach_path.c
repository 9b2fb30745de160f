/* Unit tests: which paths sbxfs attach takes for a terminal's, MOUNT/sessions/ID/terms/NAME,
 * whether they exist or not (then judged through their parent, or as written). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attach.h"
#include "check.h"

static bool ok(const char *path)
{
	return attach_term_path_check(path) == 0;
}

int main(void)
{
	char tmp[] = "/tmp/sbxfs-attach-XXXXXX", path[512];

	if (!mkdtemp(tmp))
		return 1;
	snprintf(path, sizeof(path), "%s/sessions/s1/terms/t", tmp);
	CHECK(ok(path)); /* nothing of it exists */
	snprintf(path, sizeof(path), "%s/sessions", tmp);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/sessions/s1", tmp);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/sessions/s1/terms", tmp);
	mkdir(path, 0755);
	CHECK(!ok(path));
	snprintf(path, sizeof(path), "%s/sessions/s1/terms/t/", tmp);
	CHECK(ok(path)); /* the parent exists, the terminal not yet */
	snprintf(path, sizeof(path), "%s/sessions/s1/terms/../terms/t", tmp);
	CHECK(ok(path));
	snprintf(path, sizeof(path), "%s/sessions/s1/terms/t/x", tmp);
	CHECK(!ok(path));
	snprintf(path, sizeof(path), "%s/sessions/s1/terms/.", tmp);
	CHECK(!ok(path));
	snprintf(path, sizeof(path), "%s/sessions/s1/terms/t", tmp);
	mkdir(path, 0755);
	CHECK(ok(path));
	if (chdir(path) == 0) {
		CHECK(ok("."));
		CHECK(ok("../t"));
		CHECK(!ok(".."));
	}
	CHECK(!ok("t"));
	CHECK(!ok("/"));
	CHECK(!ok("sessions/s1/terms"));
	CHECK(ok("sessions/s1/terms/t"));
	CHECK(!ok("sessions//terms/t"));
	CHECK(!ok("session/s1/terms/t"));
	snprintf(path, sizeof(path), "rm -rf %s", tmp);
	if (system(path) != 0)
		return 1;
	return check_done();
}
