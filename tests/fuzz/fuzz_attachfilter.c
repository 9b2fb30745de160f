/* Fuzz target: the filter between a sandbox terminal's output and the user's terminal
 * (src/attach/attach_filter.c). Properties: however the input is split, the output is the same
 * and fits ATTACH_FILTER_OUT_MAX; and, read by a checker of its own here, it is valid UTF-8 (or
 * ASCII, for a terminal that does not read UTF-8) holding no C1 control, no C0 control but BEL,
 * BS, HT, LF, VT, FF and CR (so no ENQ), no string (ESC ] / P / _ / ^ / X), and only complete
 * escape and control sequences of the allowlist. */
#include <stdbool.h>

#include "attach.h"
#include "fuzz.h"

static const unsigned dec_modes[] = {1,	   7,	 25,   47,   1000, 1002, 1003,
				     1004, 1006, 1047, 1049, 2004, 2026};

/* The parameters of a CSI (after its private marker): each a number of at most 5 digits, ':'
 * as a separator only if colons; their count (at most max) in *n and values in v. */
static bool numbers(const uint8_t *p, size_t len, bool colons, unsigned *v, size_t max, size_t *n)
{
	size_t digits = 0;

	*n = 0;
	if (len == 0)
		return true;
	v[0] = 0;
	*n = 1;
	for (size_t i = 0; i < len; i++) {
		if (p[i] >= '0' && p[i] <= '9') {
			if (++digits > 5)
				return false;
			v[*n - 1] = v[*n - 1] * 10 + (unsigned)(p[i] - '0');
		} else if (p[i] == ';' || (colons && p[i] == ':')) {
			if (*n == max)
				return false;
			v[(*n)++] = 0;
			digits = 0;
		} else {
			return false;
		}
	}
	return true;
}

static bool dec_mode(unsigned m)
{
	for (size_t i = 0; i < sizeof(dec_modes) / sizeof(dec_modes[0]); i++) {
		if (dec_modes[i] == m)
			return true;
	}
	return false;
}

/* The CSI that starts at s[i] (ESC [): the index after it. */
static size_t check_csi(const uint8_t *s, size_t n, size_t i)
{
	size_t p = i + 2, q, np;
	unsigned v[200];
	uint8_t prefix = 0, fin;

	if (p < n && s[p] >= '<' && s[p] <= '?')
		prefix = s[p++];
	q = p;
	while (q < n && s[q] >= 0x30 && s[q] <= 0x3f)
		q++;
	if (q < n && s[q] == ' ') { /* the one intermediate: DECSCUSR */
		FUZZ_ASSERT(q + 1 < n && s[q + 1] == 'q' && !prefix);
		FUZZ_ASSERT(numbers(s + p, q - p, false, v, 200, &np) && np <= 1);
		FUZZ_ASSERT(np == 0 || v[0] <= 6);
		return q + 2;
	}
	FUZZ_ASSERT(q < n && s[q] >= 0x40 && s[q] <= 0x7e);
	fin = s[q];
	FUZZ_ASSERT(numbers(s + p, q - p, fin == 'm' && !prefix, v, 200, &np));
	if (fin == 'h' || fin == 'l') {
		FUZZ_ASSERT(!prefix || prefix == '?');
		FUZZ_ASSERT(np > 0);
		for (size_t k = 0; k < np; k++)
			FUZZ_ASSERT(prefix ? dec_mode(v[k]) : v[k] == 4);
	} else {
		FUZZ_ASSERT(!prefix);
		FUZZ_ASSERT(strchr("@ABCDEFGHJKLMPSTXZ`bdfgmrsu", fin));
		FUZZ_ASSERT(fin != 'J' || np == 0 || v[0] <= 2);
		FUZZ_ASSERT(fin != 'T' || np <= 1);
	}
	return q + 1;
}

/* The escape sequence that starts at s[i]: the index after it. */
static size_t check_escape(const uint8_t *s, size_t n, size_t i)
{
	FUZZ_ASSERT(i + 1 < n);
	switch (s[i + 1]) {
	case '[':
		return check_csi(s, n, i);
	case '(':
		FUZZ_ASSERT(i + 2 < n && (s[i + 2] == '0' || s[i + 2] == 'B'));
		return i + 3;
	case '#':
		FUZZ_ASSERT(i + 2 < n && s[i + 2] == '8');
		return i + 3;
	default:
		FUZZ_ASSERT(s[i + 1] && strchr("78=>DEHM", s[i + 1]));
		return i + 2;
	}
}

/* The UTF-8 character at s[i]: the index after it. Valid (no overlong form, surrogate, or
 * value past U+10FFFF) and no C1 control. */
static size_t check_utf8(const uint8_t *s, size_t n, size_t i)
{
	static const uint32_t least[] = {0, 0x80, 0x800, 0x10000};
	size_t more = s[i] >= 0xf0 ? 3 : s[i] >= 0xe0 ? 2 : 1;
	uint32_t c = s[i] & (0x3f >> more);

	FUZZ_ASSERT(s[i] >= 0xc0 && s[i] <= 0xf7 && i + more < n);
	for (size_t k = 1; k <= more; k++) {
		FUZZ_ASSERT((s[i + k] & 0xc0) == 0x80);
		c = c << 6 | (s[i + k] & 0x3f);
	}
	FUZZ_ASSERT(c >= least[more] && c <= 0x10ffff && (c < 0xd800 || c > 0xdfff));
	FUZZ_ASSERT(c >= 0xa0);
	return i + more + 1;
}

static void check_output(const uint8_t *s, size_t n, bool utf8)
{
	size_t i = 0;

	while (i < n) {
		uint8_t c = s[i];

		if (c == 0x1b) {
			i = check_escape(s, n, i);
		} else if (c >= 0x80) {
			FUZZ_ASSERT(utf8);
			i = check_utf8(s, n, i);
		} else {
			FUZZ_ASSERT(c == 0x07 || (c >= 0x08 && c <= 0x0d) ||
				    (c >= 0x20 && c < 0x7f));
			i++;
		}
	}
}

/* data through a fresh filter in pieces: of size step, or of sizes drawn from data itself when
 * step is 0. The output, its length in *len; caller frees. */
static char *filter_split(const uint8_t *data, size_t size, size_t step, bool utf8, size_t *len)
{
	char *out = malloc(ATTACH_FILTER_OUT_MAX(size));
	struct attach_filter f;
	size_t at = 0, k = 0;

	if (!out)
		abort();
	*len = 0;
	attach_filter_init(&f, utf8);
	while (at < size) {
		size_t piece = step ? step : (size_t)data[k++ % size] % 23 + 1, got;

		if (piece > size - at)
			piece = size - at;
		got = attach_filter_run(&f, (const char *)data + at, piece, out + *len);
		FUZZ_ASSERT(got <= ATTACH_FILTER_OUT_MAX(piece));
		*len += got;
		at += piece;
	}
	return out;
}

static void check_mode(const uint8_t *data, size_t size, bool utf8)
{
	size_t whole_len, len;
	char *whole = filter_split(data, size, size ? size : 1, utf8, &whole_len), *other;

	check_output((const uint8_t *)whole, whole_len, utf8);
	other = filter_split(data, size, 1, utf8, &len);
	FUZZ_ASSERT(fuzz_same(whole, whole_len, other, len));
	free(other);
	other = filter_split(data, size, 0, utf8, &len);
	FUZZ_ASSERT(fuzz_same(whole, whole_len, other, len));
	free(other);
	free(whole);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_mode(data, size, true);
	check_mode(data, size, false);
	return 0;
}
