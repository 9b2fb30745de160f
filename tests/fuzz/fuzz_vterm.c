/* Fuzz target: what a terminal's program writes, through the filter (src/term/termfilter.c)
 * into libvterm and out as a snapshot (termscreen.c), with the input cut into pieces and
 * resizes in between as the fuzzer chooses. Properties: nothing hangs (a run past -timeout is a
 * finding: libvterm 0.1.4 loops for ever on REP with nothing to repeat), nothing is written
 * out of bounds (ASan sees our side; libvterm's own memory is not instrumented, so its cursor
 * is checked instead: C1 code points once walked it left of column 0), and the snapshot has a
 * line per row.
 *
 * Input: a byte of rows and one of columns, then pieces: a length byte L and L % 64 + 1 bytes
 * to feed, or L = 255 and two bytes of a new size. */
#include "fuzz.h"
#include "termscreen.h"

static void check(struct termscreen *ts, unsigned rows, unsigned cols)
{
	struct termsnap *s = termscreen_render(ts);
	size_t lines = 0;

	FUZZ_ASSERT(s->rows == rows && s->cols == cols);
	FUZZ_ASSERT(s->cursor_row < rows && s->cursor_col < cols);
	for (size_t i = 0; i < s->len; i++)
		lines += s->text[i] == '\n';
	FUZZ_ASSERT(lines == rows && s->text[s->len] == '\0');
	termsnap_unref(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned rows, cols;
	struct termscreen *ts;
	size_t at = 2;

	if (size < 2)
		return 0;
	rows = 1 + data[0] % 48;
	cols = TERMSCREEN_COLS_MIN + data[1] % 160;
	ts = termscreen_new(rows, cols);
	while (at < size) {
		uint8_t l = data[at++];
		size_t n = (size_t)l % 64 + 1;

		if (l == 255 && size - at >= 2) {
			rows = 1 + data[at] % 48;
			cols = TERMSCREEN_COLS_MIN + data[at + 1] % 160;
			at += 2;
			termscreen_resize(ts, rows, cols);
		} else {
			if (n > size - at)
				n = size - at;
			termscreen_feed(ts, (const char *)data + at, n);
			at += n;
		}
		check(ts, rows, cols);
	}
	termscreen_free(ts);
	return 0;
}
