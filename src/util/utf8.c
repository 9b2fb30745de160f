/* UTF-8 encoding of one code point (see utf8.h). */
#include "utf8.h"

#define REPLACEMENT 0xfffd

size_t utf8_put(char *out, uint32_t c)
{
	/* What text cannot hold (a surrogate, past U+10FFFF) would be invalid UTF-8 out. */
	if ((c >= 0xd800 && c < 0xe000) || c > 0x10ffff)
		c = REPLACEMENT;
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | (c >> 6));
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | (c >> 12));
		out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (c >> 18));
	out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}
