/* A JSON writer for the few documents sbxfs produces: a growing buffer, strings escaped so any
 * parser takes them (control characters, U+2028/U+2029 too), a strict UTF-8 check that tells
 * text from bytes, and base64 for the bytes. */
#ifndef SBX_JSON_H
#define SBX_JSON_H

#include <stdbool.h>
#include <stddef.h>

struct jbuf {
	char *p;
	size_t len, cap;
};

void jbuf_add(struct jbuf *b, const void *s, size_t n);
void jbuf_printf(struct jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The length of the longest prefix of s that is well-formed UTF-8 (no overlong forms, no
 * surrogates, nothing past U+10FFFF). *partial (if given) says whether what follows it is the
 * start of a character cut by the end of s, rather than a bad byte. */
size_t utf8_prefix(const char *s, size_t len, bool *partial);

/* Appends s (well-formed UTF-8) as a quoted JSON string. */
void json_string(struct jbuf *b, const char *s, size_t len);
/* Appends the base64 (RFC 4648, padded) of s as a quoted JSON string. */
void json_base64(struct jbuf *b, const void *s, size_t len);

#endif
