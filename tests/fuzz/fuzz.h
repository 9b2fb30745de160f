/* What every fuzz target shares: the libFuzzer entry point, and an assertion that names the
 * broken property and aborts, so libFuzzer keeps the input as a crash. */
#ifndef SBX_FUZZ_H
#define SBX_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline void fuzz_fail(const char *expr, const char *file, int line)
{
	fprintf(stderr, "%s:%d: property broken: %s\n", file, line, expr);
	abort();
}

#define FUZZ_ASSERT(e) ((e) ? (void)0 : fuzz_fail(#e, __FILE__, __LINE__))

/* data as a NUL-terminated string (it may hold NULs of its own); caller frees. */
static inline char *fuzz_str(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	if (size) /* data may be NULL then */
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* data with a newline added, NUL-terminated; caller frees. */
static inline char *fuzz_line(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size);

	s = realloc(s, size + 2);
	if (!s)
		abort();
	s[size] = '\n';
	s[size + 1] = '\0';
	return s;
}

static inline int fuzz_same(const char *a, size_t alen, const char *b, size_t blen)
{
	return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

#endif
