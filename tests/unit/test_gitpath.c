/* Unit tests: host paths in sbxfs-git's messages (gitpath.h): the workspace and the target as
 * commands see them, by any of the paths libgit2 has for them, and no other absolute path. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "gitpath.h"

#define ELSEWHERE "(a path outside the workspace)"

static bool shown_is(const char *msg, const char *want)
{
	char *got = gitpath_shown(msg);
	bool same = !strcmp(got, want);

	if (!same)
		fprintf(stderr, "%s\n  -> %s\n  wanted %s\n", msg, got, want);
	free(got);
	return same;
}

static char *cat(const char *a, const char *b)
{
	char *s = NULL;

	if (asprintf(&s, "%s%s", a, b) < 0)
		abort();
	return s;
}

int main(void)
{
	char base[] = "/tmp/sbxfs-test-gitpath-XXXXXX", fdlink[64];
	char *real, *link, *target, *m;
	int fd;

	if (!mkdtemp(base))
		abort();
	/* The workspace by a symlink (its real path differs), the target below it. */
	real = cat(base, "/real");
	link = cat(base, "/link");
	target = cat(real, "/t");
	if (mkdir(real, 0755) < 0 || symlink(real, link) < 0 || mkdir(target, 0755) < 0)
		abort();
	fd = open(target, O_PATH | O_DIRECTORY);
	if (fd < 0)
		abort();
	gitpath_init(link, "/workspace", fd, "/workspace/t");
	snprintf(fdlink, sizeof(fdlink), "/proc/self/fd/%d", fd);

	m = cat(fdlink, "/.git': File exists");
	CHECK(shown_is(m, "/workspace/t/.git': File exists"));
	free(m);
	m = cat("failed to make directory '", target);
	CHECK(shown_is(m, "failed to make directory '/workspace/t"));
	free(m);
	m = cat(link, "/src");
	CHECK(shown_is(m, "/workspace/src"));
	free(m);
	m = cat(real, "/src/.git/config' is locked");
	CHECK(shown_is(m, "/workspace/src/.git/config' is locked"));
	free(m);
	/* A whole name only: real2 is not the workspace. */
	m = cat(real, "2/x");
	CHECK(shown_is(m, ELSEWHERE));
	free(m);
	/* Any other path, quoted or not, whatever follows it. */
	CHECK(shown_is("failed to resolve path '/tmp/missing/.git': No such file or directory",
		       "failed to resolve path '" ELSEWHERE "': No such file or directory"));
	CHECK(shown_is("failed open - '/srv/x y/config' is locked: Permission denied",
		       "failed open - '" ELSEWHERE "' is locked: Permission denied"));
	CHECK(
	    shown_is("could not read /etc/passwd: denied", "could not read " ELSEWHERE ": denied"));
	CHECK(shown_is("bad url file:///etc/x.", "bad url file://" ELSEWHERE "."));
	CHECK(shown_is("/etc", ELSEWHERE));
	/* Not paths: kept. */
	CHECK(shown_is("https://host/a/b.git: 404", "https://host/a/b.git: 404"));
	CHECK(shown_is("received 1/2 objects, a / b", "received 1/2 objects, a / b"));
	CHECK(shown_is("", ""));

	close(fd);
	rmdir(target);
	unlink(link);
	rmdir(real);
	rmdir(base);
	free(target);
	free(link);
	free(real);
	return check_done();
}
