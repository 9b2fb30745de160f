/* Unit tests: utf8_put (utf8.h) against glibc's encoder for every code point, and U+FFFD for
 * what text cannot hold. */
#include <limits.h>
#include <locale.h>
#include <string.h>
#include <wchar.h>

#include "check.h"
#include "utf8.h"

static const char fffd[] = "\xef\xbf\xbd";

static void test_every_code_point(void)
{
	size_t bad = 0;

	for (uint32_t c = 0; c <= 0x10ffff; c++) {
		char ours[4], theirs[MB_LEN_MAX];
		mbstate_t st;
		size_t n, m;

		if (c >= 0xd800 && c < 0xe000)
			continue;
		memset(&st, 0, sizeof(st));
		n = utf8_put(ours, c);
		m = wcrtomb(theirs, (wchar_t)c, &st);
		if (n != m || memcmp(ours, theirs, n))
			bad++;
	}
	CHECK(bad == 0);
}

static bool replaced(uint32_t c)
{
	char out[4];

	return utf8_put(out, c) == 3 && !memcmp(out, fffd, 3);
}

static void test_what_text_cannot_hold(void)
{
	CHECK(replaced(0xd800));
	CHECK(replaced(0xdbff));
	CHECK(replaced(0xdc00));
	CHECK(replaced(0xdfff));
	CHECK(replaced(0x110000));
	CHECK(replaced(0x7fffffff));
	CHECK(replaced(0xffffffff));
	CHECK(!replaced(0x10ffff));
	CHECK(!replaced(0xd7ff));
}

int main(void)
{
	CHECK(setlocale(LC_CTYPE, "C.UTF-8") != NULL);
	test_every_code_point();
	test_what_text_cannot_hold();
	return check_done();
}
