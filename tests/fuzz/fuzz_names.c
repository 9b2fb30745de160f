/* Fuzz target: session and process names (session_id_valid; procs/ names use the same rule)
 * and variable names (env_name_valid). Properties: a valid session or process name is one safe
 * path component (1 to SESSION_ID_MAX bytes of [A-Za-z0-9._-], not "." or ".."), a valid
 * variable name is exactly [A-Za-z_][A-Za-z0-9_]*, and both read only the bytes they are given
 * (every prefix is checked in a buffer of its exact size, so ASan sees a read past it). */
#include <ctype.h>

#include "envlist.h"
#include "fuzz.h"
#include "session.h"

static int alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static void check_session_name(const char *s, size_t len)
{
	bool want = len >= 1 && len <= SESSION_ID_MAX && !(len == 1 && s[0] == '.') &&
		    !(len == 2 && s[0] == '.' && s[1] == '.');

	for (size_t i = 0; i < len && want; i++)
		want = alnum(s[i]) || s[i] == '.' || s[i] == '_' || s[i] == '-';
	FUZZ_ASSERT(session_id_valid(s, len) == want);
}

static void check_env_name(const char *s, size_t len)
{
	bool want = len > 0 && !isdigit((unsigned char)s[0]);

	for (size_t i = 0; i < len && want; i++)
		want = alnum(s[i]) || s[i] == '_';
	FUZZ_ASSERT(env_name_valid(s, len) == want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (size_t cut = 0; cut <= size && cut <= SESSION_ID_MAX + 8; cut++) {
		char *exact = malloc(cut ? cut : 1);

		if (!exact)
			abort();
		if (cut)
			memcpy(exact, data, cut);
		check_session_name(exact, cut);
		check_env_name(exact, cut);
		free(exact);
	}
	if (size > SESSION_ID_MAX + 8) {
		check_session_name((const char *)data, size);
		check_env_name((const char *)data, size);
	}
	return 0;
}
