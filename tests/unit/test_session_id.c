/* Unit tests: which session ids are accepted. */
#include <string.h>

#include "check.h"
#include "session.h"

static bool valid(const char *id)
{
	return session_id_valid(id, strlen(id));
}

int main(void)
{
	char long_id[SESSION_ID_MAX + 2];

	CHECK(valid("default"));
	CHECK(valid("a.b_c-D9"));
	CHECK(valid("..."));
	CHECK(!valid(""));
	CHECK(!valid("."));
	CHECK(!valid(".."));
	CHECK(!valid("a b"));
	CHECK(!valid("a/b"));
	CHECK(!valid("a:b"));
	memset(long_id, 'x', sizeof(long_id));
	long_id[SESSION_ID_MAX] = '\0';
	CHECK(valid(long_id));
	long_id[SESSION_ID_MAX] = 'x';
	long_id[SESSION_ID_MAX + 1] = '\0';
	CHECK(!valid(long_id));
	return check_done();
}
