/* Unit tests: the $'...' form of values (escape.h), and its round trip over every short input. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "escape.h"

static bool enc_is(const char *v, const char *want)
{
	size_t len;
	char *e = esc_encode(v, strlen(v), &len);
	bool ok = len == strlen(want) && !strcmp(e, want);

	free(e);
	return ok;
}

static bool dec_is(const char *in, const char *want)
{
	char *d;
	size_t len;
	bool ok;

	if (esc_decode(in, strlen(in), &d, &len) < 0)
		return false;
	ok = len == strlen(want) && !strcmp(d, want);
	free(d);
	return ok;
}

static int dec_err(const char *in, size_t len)
{
	char *d;
	size_t n;
	int rc = esc_decode(in, len, &d, &n);

	if (rc == 0)
		free(d);
	return rc;
}

static void test_encode(void)
{
	CHECK(enc_is("plain value", "plain value"));
	CHECK(enc_is("back\\slash 'q' $x", "back\\slash 'q' $x"));
	CHECK(enc_is("", ""));
	CHECK(enc_is("a\nLD_PRELOAD=/x.so", "$'a\\nLD_PRELOAD=/x.so'"));
	CHECK(enc_is("t\tr\r\x1b\x7f", "$'t\\tr\\r\\x1b\\x7f'"));
	CHECK(enc_is("$'x'", "$'$\\'x\\''"));
	CHECK(enc_is("a\n\\'", "$'a\\n\\\\\\''"));
	CHECK(enc_is("$x", "$x"));
	CHECK(enc_is("caf\xc3\xa9", "caf\xc3\xa9"));
}

static void test_decode(void)
{
	CHECK(dec_is("plain", "plain"));
	CHECK(dec_is("$'a\\nb'", "a\nb"));
	CHECK(dec_is("$'\\x41\\x4'", "A\x04"));
	CHECK(dec_is("$'\\e\\a\\\"\\''", "\033\a\"'"));
	CHECK(dec_is("$''", ""));
	CHECK(dec_is("$", "$"));
	CHECK(dec_err("$'", 2) == -EINVAL);
	CHECK(dec_err("$'a", 3) == -EINVAL);
	CHECK(dec_err("$'a'b'", 6) == -EINVAL);
	CHECK(dec_err("$'a\\'", 5) == -EINVAL);
	CHECK(dec_err("$'\\x00'", 7) == -EINVAL);
	CHECK(dec_err("$'\\q'", 5) == -EINVAL);
	CHECK(dec_err("$'\\xg'", 6) == -EINVAL);
	CHECK(dec_err("a\nb", 3) == -EINVAL);
	CHECK(dec_err("a\0b", 3) == -EINVAL);
}

/* Every string of up to 3 bytes from an alphabet of the bytes that matter. */
static void test_roundtrip_exhaustive(void)
{
	static const char alpha[] = "$'\\\nxa\t\x01\x7f\xff\"";
	size_t k = sizeof(alpha) - 1;
	uint8_t buf[3];
	int bad = 0;

	for (size_t len = 0; len <= 3; len++) {
		size_t total = 1;

		for (size_t i = 0; i < len; i++)
			total *= k;
		for (size_t n = 0; n < total; n++) {
			size_t m = n;

			for (size_t i = 0; i < len; i++, m /= k)
				buf[i] = (uint8_t)alpha[m % k];
			bad += esc_roundtrip(buf, len) < 0;
		}
	}
	CHECK(bad == 0);
}

/* The log's %HH form: printable ASCII as is, every other byte, % and (but in the last field)
 * a space as %HH, so a field holds no separator and no line break. */
static void test_percent(void)
{
	struct {
		const char *in, *field, *last;
	} cases[] = {
	    {"a.example", "a.example", "a.example"},
	    {"a b\nc", "a%20b%0Ac", "a b%0Ac"},
	    {"100%", "100%25", "100%25"},
	    {"\x01\x1b[2J\x7f\xff\xc3\xa9", "%01%1B[2J%7F%FF%C3%A9", "%01%1B[2J%7F%FF%C3%A9"},
	    {"", "", ""},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *f = esc_percent(cases[i].in, false), *l = esc_percent(cases[i].in, true);

		CHECK(!strcmp(f, cases[i].field));
		CHECK(!strcmp(l, cases[i].last));
		free(f);
		free(l);
	}
}

int main(void)
{
	test_percent();
	test_encode();
	test_decode();
	test_roundtrip_exhaustive();
	return check_done();
}
