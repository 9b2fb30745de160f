/* Fuzz target: the JSON writer (src/util/json.c) that result and status documents are made with.
 * Properties: utf8_prefix agrees with a plain decoder (no overlong forms, no surrogates, nothing
 * past U+10FFFF) and says partial only for a character a later byte can complete; a string's
 * JSON form is well-formed UTF-8 with no raw control character or U+2028/U+2029 and reads back
 * as the same bytes; base64 reads back as the same bytes. */
#include "fuzz.h"
#include "json.h"

/* How many bytes a character starting with c has by its bit pattern, 0 for none. */
static unsigned lead_len(unsigned c)
{
	if (c < 0x80)
		return 1;
	if (c >> 5 == 6)
		return 2;
	if (c >> 4 == 14)
		return 3;
	return c >> 3 == 30 ? 4 : 0;
}

/* The length of the longest well-formed UTF-8 prefix, decoding each character's value. */
static size_t ref_prefix(const unsigned char *s, size_t len)
{
	size_t pos = 0;

	while (pos < len) {
		unsigned c = s[pos], n = lead_len(c);
		static const unsigned min[] = {0, 0, 0x80, 0x800, 0x10000};
		unsigned cp = n == 1 ? c : n == 2 ? c & 0x1f : n == 3 ? c & 0x0f : c & 0x07;

		if (n == 0 || pos + n > len)
			return pos;
		for (unsigned i = 1; i < n; i++) {
			if ((s[pos + i] & 0xc0) != 0x80)
				return pos;
			cp = cp << 6 | (s[pos + i] & 0x3f);
		}
		if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return pos;
		pos += n;
	}
	return pos;
}

/* A cut character: some continuation bytes make it whole. */
static int completes(const char *s, size_t pos, size_t len)
{
	static const unsigned char tails[] = {0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf};
	char buf[8];
	size_t have = len - pos;

	if (have == 0 || have > 3)
		return 0;
	memcpy(buf, s + pos, have);
	for (size_t add = 1; have + add <= 4; add++) {
		for (size_t k = 0; k < 6; k++) {
			buf[have] = (char)tails[k];
			for (size_t j = have + 1; j < have + add; j++)
				buf[j] = (char)0x80;
			if (utf8_prefix(buf, have + add, NULL) == have + add)
				return 1;
		}
	}
	return 0;
}

static void put_utf8(char **o, unsigned cp)
{
	if (cp < 0x80) {
		*(*o)++ = (char)cp;
	} else if (cp < 0x800) {
		*(*o)++ = (char)(0xc0 | cp >> 6);
		*(*o)++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*(*o)++ = (char)(0xe0 | cp >> 12);
		*(*o)++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*(*o)++ = (char)(0x80 | (cp & 0x3f));
	}
}

/* Reads a JSON string as a strict parser would; returns its bytes' length, or -1. */
static long read_json_string(const char *j, size_t len, char *out)
{
	char *o = out;
	size_t i;

	if (len < 2 || j[0] != '"' || j[len - 1] != '"')
		return -1;
	for (i = 1; i < len - 1; i++) {
		unsigned char c = (unsigned char)j[i];
		unsigned cp;

		if (c < 0x20 || c == 0x7f || c == '"')
			return -1;
		if (c == 0xe2 && i + 2 < len && j[i + 1] == (char)0x80 &&
		    (j[i + 2] == (char)0xa8 || j[i + 2] == (char)0xa9))
			return -1;
		if (c != '\\') {
			*o++ = (char)c;
			continue;
		}
		if (++i >= len - 1)
			return -1;
		if (strchr("\"\\/", j[i]))
			*o++ = j[i];
		else if (j[i] == 'n' || j[i] == 't' || j[i] == 'r')
			*o++ = j[i] == 'n' ? '\n' : j[i] == 't' ? '\t' : '\r';
		else if (j[i] == 'u' && i + 4 < len - 1 && sscanf(j + i + 1, "%4x", &cp) == 1) {
			put_utf8(&o, cp);
			i += 4;
		} else
			return -1;
	}
	return o - out;
}

static size_t unbase64(const char *s, size_t len, unsigned char *out)
{
	static const char abc[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = 0;

	FUZZ_ASSERT(len % 4 == 0);
	for (size_t i = 0; i < len; i += 4) {
		unsigned v = 0, pad = 0;

		for (size_t k = 0; k < 4; k++) {
			const char *p = s[i + k] == '=' ? NULL : strchr(abc, s[i + k]);

			FUZZ_ASSERT(s[i + k] == '=' ? i + 4 == len && k >= 2 : p && *p);
			pad += !p;
			v = v << 6 | (p ? (unsigned)(p - abc) : 0);
		}
		out[n++] = (unsigned char)(v >> 16);
		if (pad < 2)
			out[n++] = (unsigned char)(v >> 8);
		if (pad < 1)
			out[n++] = (unsigned char)v;
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct jbuf b = {0}, b64 = {0};
	bool partial;
	size_t text = utf8_prefix(s, size, &partial);
	char *back;
	unsigned char *raw;
	long n;

	FUZZ_ASSERT(text == ref_prefix(data, size));
	FUZZ_ASSERT(partial == completes(s, text, size));
	json_string(&b, s, text);
	FUZZ_ASSERT(b.len == strlen(b.p)); /* a NUL is escaped too */
	FUZZ_ASSERT(utf8_prefix(b.p, b.len, NULL) == b.len);
	back = malloc(b.len + 1);
	n = read_json_string(b.p, b.len, back);
	FUZZ_ASSERT(n >= 0 && fuzz_same(back, (size_t)n, s, text));
	free(back);
	free(b.p);
	json_base64(&b64, data, size);
	FUZZ_ASSERT(b64.len >= 2 && b64.p[0] == '"' && b64.p[b64.len - 1] == '"');
	raw = malloc(b64.len);
	FUZZ_ASSERT(fuzz_same((char *)raw, unbase64(b64.p + 1, b64.len - 2, raw), s, size));
	free(raw);
	free(b64.p);
	return 0;
}
