/* The $'...' text form of values (see escape.h): encoding, decoding, and a round-trip check
 * for fuzzers; and the %HH form of a log's fields. */
#include "escape.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

char *esc_status_error(char *text, char *error)
{
	char *shown, *with_error;
	size_t n;

	if (!error)
		return text;
	shown = esc_encode(error, strlen(error), &n);
	with_error = xasprintf("%serror %s\n", text, shown);
	free(shown);
	free(text);
	free(error);
	return with_error;
}

static bool is_ctl(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

static bool needs_quoting(const char *v, size_t len)
{
	if (len >= 2 && v[0] == '$' && v[1] == '\'')
		return true; /* else it would read back as a quoted form */
	for (size_t i = 0; i < len; i++)
		if (is_ctl((unsigned char)v[i]))
			return true;
	return false;
}

char *esc_encode(const char *v, size_t len, size_t *outlen)
{
	static const char hex[] = "0123456789abcdef";
	char *out, *p;

	if (!needs_quoting(v, len)) {
		*outlen = len;
		return xstrndup(v, len);
	}
	out = xmalloc(len * 4 + 4); /* at worst \xHH for each byte, and $'' */
	p = out;
	*p++ = '$';
	*p++ = '\'';
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c == '\\' || c == '\'') {
			*p++ = '\\';
			*p++ = (char)c;
		} else if (c == '\n' || c == '\t' || c == '\r') {
			*p++ = '\\';
			*p++ = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
		} else if (is_ctl(c)) {
			*p++ = '\\';
			*p++ = 'x';
			*p++ = hex[c >> 4];
			*p++ = hex[c & 15];
		} else {
			*p++ = (char)c;
		}
	}
	*p++ = '\'';
	*p = '\0';
	*outlen = (size_t)(p - out);
	return out;
}

char *esc_percent(const char *v, bool spaces)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t len = strlen(v), o = 0;
	char *out = xmalloc(3 * len + 1);

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c < 0x20 || c > 0x7e || c == '%' || (c == ' ' && !spaces)) {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		} else {
			out[o++] = (char)c;
		}
	}
	out[o] = '\0';
	return out;
}

int esc_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The byte an escape stands for; *used gets how many bytes after the backslash it took. */
static int unescape(const char *s, size_t avail, size_t *used)
{
	static const char from[] = "\\'\"ntrabefv", to[] = "\\'\"\n\t\r\a\b\033\f\v";
	const char *k;
	int hi, lo;

	*used = 1;
	if (avail == 0)
		return -EINVAL;
	if (s[0] == 'x') {
		hi = avail > 1 ? esc_hexval(s[1]) : -1;
		if (hi < 0)
			return -EINVAL;
		lo = avail > 2 ? esc_hexval(s[2]) : -1;
		*used = lo < 0 ? 2 : 3;
		return lo < 0 ? hi : hi * 16 + lo;
	}
	k = memchr(from, s[0], sizeof(from) - 1);
	return k ? (unsigned char)to[k - from] : -EINVAL;
}

int esc_decode(const char *in, size_t len, char **out, size_t *outlen)
{
	char *buf, *p;
	size_t i, used;
	int c;

	if (memchr(in, '\0', len) || memchr(in, '\n', len))
		return -EINVAL;
	if (len < 2 || in[0] != '$' || in[1] != '\'') {
		*out = xstrndup(in, len);
		*outlen = len;
		return 0;
	}
	if (len < 3 || in[len - 1] != '\'')
		return -EINVAL;
	buf = p = xmalloc(len);
	for (i = 2; i < len - 1; i++) {
		if (in[i] == '\'') {
			free(buf);
			return -EINVAL; /* a quote ends the form only at the end */
		}
		if (in[i] != '\\') {
			*p++ = in[i];
			continue;
		}
		c = unescape(in + i + 1, len - 1 - (i + 1), &used);
		if (c <= 0) {
			free(buf);
			return -EINVAL; /* a bad escape, or a NUL */
		}
		*p++ = (char)c;
		i += used;
	}
	*p = '\0';
	*outlen = (size_t)(p - buf);
	*out = buf;
	return 0;
}

int esc_roundtrip(const uint8_t *data, size_t size)
{
	const char *v = (const char *)data;
	char *enc, *dec, *enc2, *dec2;
	size_t elen, dlen, elen2, dlen2;
	int rc = 0;

	if (!memchr(v, '\0', size)) {
		enc = esc_encode(v, size, &elen);
		if (memchr(enc, '\n', elen) || esc_decode(enc, elen, &dec, &dlen) < 0)
			rc = -1;
		else if (dlen != size || memcmp(dec, v, size) != 0)
			rc = -1, free(dec);
		else
			free(dec);
		free(enc);
	}
	if (rc == 0 && esc_decode(v, size, &dec, &dlen) == 0) {
		enc2 = esc_encode(dec, dlen, &elen2);
		if (esc_decode(enc2, elen2, &dec2, &dlen2) < 0)
			rc = -1;
		else if (dlen2 != dlen || memcmp(dec2, dec, dlen) != 0)
			rc = -1, free(dec2);
		else
			free(dec2);
		free(enc2);
		free(dec);
	}
	return rc;
}
