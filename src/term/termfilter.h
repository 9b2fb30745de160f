/* What of a terminal's output may reach libvterm. The program's bytes are attacker input, and
 * libvterm 0.1.4 (Debian 12) has inputs that hang or corrupt it:
 *  - REP (CSI Ps b) loops forever when no printable character came before it, or when the last
 *    one was a lone combining mark (its width, 0, is the loop's step);
 *  - a C1 code point sent as UTF-8 (U+0080..U+009F, also when its bytes are split by controls)
 *    has width -1 and walks the cursor left of column 0, so the next glyph is written outside
 *    the screen's buffer;
 *  - a CSI with more than 16 parameters writes past its parameter array, over the parser's
 *    callback pointer;
 *  - combining marks that keep coming without a base character grow a buffer without bound,
 *    and each run of them rescans it (quadratic).
 *  - a terminal made smaller keeps a cursor saved (DECSC, modes 1048 and 1049) where it was,
 *    and restoring it puts the cursor outside the screen;
 *  - a DECRQSS query it does not know is formatted with "%.s" and no string for it.
 * The filter follows libvterm's parser state byte by byte, as its parser.c does, and passes on
 * a stream where none of these can happen: every REP is cancelled and reported to the caller,
 * which repeats the glyph itself (termscreen.c); the UTF-8 it passes on is well formed, with C1
 * code points and malformed sequences as U+FFFD; a CSI keeps its first 16 parameters (and 9
 * digits of each, so that no count overflows an int); and at most TERMFILTER_MARKS possible
 * combining marks follow a base; a DCS reaches it empty. It stops after each escape sequence, so
 * that the caller can bring the cursor back into the screen before a glyph is written where it
 * points. */
#ifndef SBX_TERMFILTER_H
#define SBX_TERMFILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Marks passed after a base: a cell of libvterm holds a base and 5 more, so the rest would not
 * show anyway. */
#define TERMFILTER_MARKS 5
/* The most a run over n bytes writes. */
#define TERMFILTER_OUT_MAX(n) (3 * (n) + 4)

struct termfilter {
	uint8_t state;	 /* libvterm's parser state after what was passed on */
	uint8_t nsep;	 /* CSI: separators passed */
	uint8_t ndigits; /* CSI: digits passed of the current parameter */
	bool dropping;	 /* CSI: past its 16th parameter */
	bool marked;	 /* CSI: it has a leader or an intermediate byte (then it is no REP) */
	bool dcs;	 /* the string is a DCS */
	uint32_t count;	 /* CSI: its first parameter */
	uint8_t u8[4];	 /* a UTF-8 sequence not complete yet */
	uint8_t u8len, u8need;
	uint8_t marks; /* possible combining marks passed since the last base */
	char glyph[4 * (1 + TERMFILTER_MARKS)]; /* the last base passed and its marks */
	uint8_t glyphlen;
	uint8_t glyphwidth; /* its base's columns: 1 or 2 */
};

void termfilter_init(struct termfilter *f);
/* Filters in into out (TERMFILTER_OUT_MAX(len) bytes), *outlen what was written. Stops after an
 * escape sequence; *rep is then a REP's count (at least 1), else 0. Returns the bytes of in it
 * consumed. */
size_t termfilter_run(struct termfilter *f, const char *in, size_t len, char *out, size_t *outlen,
		      unsigned *rep);
/* Before bytes of the daemon's own go in between the program's: a UTF-8 sequence left open is
 * dropped, where the next byte would show it as U+FFFD (at a cursor that may be outside the
 * screen until those bytes moved it). */
void termfilter_interrupt(struct termfilter *f);
/* The glyph a REP repeats (the last printable character passed, with its marks): its bytes
 * (*len 0: none yet) and columns. */
const char *termfilter_glyph(const struct termfilter *f, size_t *len, unsigned *width);
/* Whether libvterm may take code point cp as a combining mark: every code point of zero (or
 * negative) width in glibc's C.UTF-8, and those that libvterm's older tables still combine.
 * Without C.UTF-8, every non-ASCII code point. */
bool termfilter_maybe_mark(uint32_t cp);
/* Columns of cp as glibc's C.UTF-8 has them (1 without it). */
unsigned termfilter_width(uint32_t cp);

#endif
