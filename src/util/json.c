/* The JSON writer: buffer growth, the UTF-8 check, string escaping and base64. */
#include "json.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "xmalloc.h"

static void reserve(struct jbuf *b, size_t n)
{
	if (b->len + n + 1 <= b->cap)
		return;
	b->cap = (b->len + n + 1) * 2;
	b->p = xrealloc(b->p, b->cap);
}

void jbuf_add(struct jbuf *b, const void *s, size_t n)
{
	reserve(b, n);
	if (n) /* s may be NULL then */
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void jbuf_printf(struct jbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	reserve(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* The length of the character at s (1-4), or 0 if it is malformed; *cut when it is well-formed
 * so far but runs past the end. */
static size_t utf8_char(const unsigned char *s, size_t len, bool *cut)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t n;

	*cut = false;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0; /* a continuation byte, an overlong lead (C0, C1) or past U+10FFFF */
	/* The second byte's range rules out overlong forms, surrogates and past U+10FFFF. */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	for (size_t i = 1; i < n; i++) {
		if (i >= len) {
			*cut = true;
			return 0;
		}
		if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xbf))
			return 0;
	}
	return n;
}

size_t utf8_prefix(const char *s, size_t len, bool *partial)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t pos = 0, n;
	bool cut = false;

	while (pos < len && (n = utf8_char(u + pos, len - pos, &cut)) > 0)
		pos += n;
	if (partial)
		*partial = cut;
	return pos;
}

void json_string(struct jbuf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t run = 0;

	reserve(b, len + 2);
	jbuf_add(b, "\"", 1);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = u[i];
		char esc[7] = {'\\', 0};
		size_t elen = 2, skip = 0;

		if (c == '"' || c == '\\')
			esc[1] = (char)c;
		else if (c == '\n')
			esc[1] = 'n';
		else if (c == '\t')
			esc[1] = 't';
		else if (c == '\r')
			esc[1] = 'r';
		else if (c < 0x20 || c == 0x7f) {
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			elen = 6;
		} else if (c == 0xe2 && i + 2 < len && u[i + 1] == 0x80 &&
			   (u[i + 2] == 0xa8 || u[i + 2] == 0xa9)) {
			/* U+2028 and U+2029 end a line in JavaScript source. */
			memcpy(esc + 1, u[i + 2] == 0xa8 ? "u2028" : "u2029", 5);
			elen = 6;
			skip = 2;
		} else {
			run++;
			continue;
		}
		jbuf_add(b, s + i - run, run);
		run = 0;
		jbuf_add(b, esc, elen);
		i += skip;
	}
	jbuf_add(b, s + len - run, run);
	jbuf_add(b, "\"", 1);
}

void json_base64(struct jbuf *b, const void *s, size_t len)
{
	static const char abc[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *u = s;
	char *o;

	reserve(b, (len + 2) / 3 * 4 + 2);
	o = b->p + b->len;
	*o++ = '"';
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)u[i] << 16;

		if (i + 1 < len)
			v |= (uint32_t)u[i + 1] << 8;
		if (i + 2 < len)
			v |= u[i + 2];
		*o++ = abc[v >> 18];
		*o++ = abc[(v >> 12) & 63];
		*o++ = i + 1 < len ? abc[(v >> 6) & 63] : '=';
		*o++ = i + 2 < len ? abc[v & 63] : '=';
	}
	*o++ = '"';
	*o = '\0';
	b->len = (size_t)(o - b->p);
}
