/* Unit tests: the UTF-8 check, JSON string escaping and base64. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "json.h"

static bool valid(const char *s, size_t len)
{
	return utf8_prefix(s, len, NULL) == len;
}

static void test_utf8(void)
{
	bool partial;

	CHECK(valid("", 0));
	CHECK(valid("plain ascii\n", 12));
	CHECK(valid("\xc3\xa9", 2));	     /* é */
	CHECK(valid("\xe2\x82\xac", 3));     /* € */
	CHECK(valid("\xf0\x9f\x98\x80", 4)); /* U+1F600 */
	CHECK(valid("\xf4\x8f\xbf\xbf", 4)); /* U+10FFFF */
	CHECK(valid("\xef\xbf\xbf", 3));     /* U+FFFF */
	CHECK(!valid("\xff", 1));
	CHECK(!valid("\x80", 1));     /* a lone continuation byte */
	CHECK(!valid("\xc0\xaf", 2)); /* overlong '/' */
	CHECK(!valid("\xc1\xbf", 2));
	CHECK(!valid("\xe0\x80\xaf", 3));     /* overlong, 3 bytes */
	CHECK(!valid("\xf0\x80\x80\xaf", 4)); /* overlong, 4 bytes */
	CHECK(!valid("\xed\xa0\x80", 3));     /* surrogate U+D800 */
	CHECK(!valid("\xed\xbf\xbf", 3));     /* surrogate U+DFFF */
	CHECK(valid("\xed\x9f\xbf", 3));      /* U+D7FF */
	CHECK(!valid("\xf4\x90\x80\x80", 4)); /* U+110000 */
	CHECK(!valid("\xf5\x80\x80\x80", 4));
	CHECK(!valid("\xc3\x28", 2)); /* bad continuation */

	CHECK(utf8_prefix("ab\xe2\x82", 4, &partial) == 2 && partial); /* € cut */
	CHECK(utf8_prefix("ab\xff", 3, &partial) == 2 && !partial);
	CHECK(utf8_prefix("ab\xe2\x28", 4, &partial) == 2 && !partial);
	CHECK(utf8_prefix("abc", 3, &partial) == 3 && !partial);
}

static bool str_is(const char *in, size_t len, const char *want)
{
	struct jbuf b = {0};
	bool ok;

	json_string(&b, in, len);
	ok = b.len == strlen(want) && !memcmp(b.p, want, b.len);
	free(b.p);
	return ok;
}

static void test_string(void)
{
	CHECK(str_is("", 0, "\"\""));
	CHECK(str_is("abc", 3, "\"abc\""));
	CHECK(str_is("a\"b\\c", 5, "\"a\\\"b\\\\c\""));
	CHECK(str_is("\n\t\r", 3, "\"\\n\\t\\r\""));
	CHECK(str_is("\x01\x1f\x7f\b\f", 5, "\"\\u0001\\u001f\\u007f\\u0008\\u000c\""));
	CHECK(str_is("\0x", 2, "\"\\u0000x\""));
	CHECK(str_is("/", 1, "\"/\""));
	CHECK(str_is("\xc3\xa9", 2, "\"\xc3\xa9\""));
	CHECK(str_is("a\xe2\x80\xa8"
		     "b\xe2\x80\xa9",
		     8, "\"a\\u2028b\\u2029\""));
	CHECK(str_is("\xe2\x80\xa7", 3, "\"\xe2\x80\xa7\"")); /* U+2027 stays */
}

static bool b64_is(const char *in, size_t len, const char *want)
{
	struct jbuf b = {0};
	bool ok;

	json_base64(&b, in, len);
	ok = b.len == strlen(want) && !strcmp(b.p, want);
	free(b.p);
	return ok;
}

static void test_base64(void)
{
	CHECK(b64_is("", 0, "\"\""));
	CHECK(b64_is("f", 1, "\"Zg==\""));
	CHECK(b64_is("fo", 2, "\"Zm8=\""));
	CHECK(b64_is("foo", 3, "\"Zm9v\""));
	CHECK(b64_is("foobar", 6, "\"Zm9vYmFy\""));
	CHECK(b64_is("\xff\xfe\x00", 3, "\"//4A\""));
}

static void test_buffer(void)
{
	struct jbuf b = {0};

	for (int i = 0; i < 1000; i++)
		jbuf_printf(&b, "%d,", i);
	jbuf_add(&b, "x", 1);
	CHECK(b.len == strlen(b.p));
	CHECK(!strncmp(b.p, "0,1,2,", 6) && b.p[b.len - 1] == 'x');
	free(b.p);
}

int main(void)
{
	test_utf8();
	test_string();
	test_base64();
	test_buffer();
	return check_done();
}
