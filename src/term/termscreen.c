/* A terminal's screen through libvterm (see termscreen.h). The emulator only watches: what it
 * would answer to the program's queries is dropped, as an attached terminal answers them. */
#include "termscreen.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <vterm.h>

#include "log.h"
#include "xmalloc.h"

struct termscreen {
	VTerm *vt;
	VTermScreen *screen;
	unsigned rows, cols;
};

static void drop_output(const char *s, size_t len, void *user)
{
	(void)s;
	(void)len;
	(void)user;
}

struct termscreen *termscreen_new(unsigned rows, unsigned cols)
{
	struct termscreen *ts = xcalloc(1, sizeof(*ts));

	ts->vt = vterm_new((int)rows, (int)cols);
	if (!ts->vt)
		fatalx("out of memory");
	ts->rows = rows;
	ts->cols = cols;
	vterm_set_utf8(ts->vt, 1);
	vterm_output_set_callback(ts->vt, drop_output, NULL);
	ts->screen = vterm_obtain_screen(ts->vt);
	vterm_screen_enable_altscreen(ts->screen, 1);
	vterm_screen_reset(ts->screen, 1);
	return ts;
}

void termscreen_free(struct termscreen *ts)
{
	if (!ts)
		return;
	vterm_free(ts->vt);
	free(ts);
}

void termscreen_feed(struct termscreen *ts, const char *data, size_t len)
{
	vterm_input_write(ts->vt, data, len);
}

void termscreen_resize(struct termscreen *ts, unsigned rows, unsigned cols)
{
	ts->rows = rows;
	ts->cols = cols;
	vterm_set_size(ts->vt, (int)rows, (int)cols);
}

void termscreen_cursor(struct termscreen *ts, unsigned *row, unsigned *col)
{
	VTermPos pos;

	vterm_state_get_cursorpos(vterm_obtain_state(ts->vt), &pos);
	*row = (unsigned)pos.row;
	*col = (unsigned)pos.col;
}

/* UTF-8 of one code point (libvterm hands out code points). */
static size_t put_utf8(char *out, uint32_t c)
{
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
	out[0] = (char)(0xf0 | ((c >> 18) & 0x07));
	out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/* Appends row r at out; returns the bytes written (blanks at its end left out). */
static size_t render_row(struct termscreen *ts, int r, char *out)
{
	size_t len = 0;

	for (int c = 0; c < (int)ts->cols; c++) {
		VTermScreenCell cell;
		VTermPos pos = {r, c};

		if (!vterm_screen_get_cell(ts->screen, pos, &cell) || cell.chars[0] == (uint32_t)-1)
			continue; /* the right half of a wide character */
		if (!cell.chars[0]) {
			out[len++] = ' ';
			continue;
		}
		for (int i = 0; i < VTERM_MAX_CHARS_PER_CELL && cell.chars[i]; i++)
			len +=
			    put_utf8(out + len, cell.chars[i] > 0x10ffff ? 0xfffd : cell.chars[i]);
	}
	while (len > 0 && out[len - 1] == ' ')
		len--;
	return len;
}

char *termscreen_text(struct termscreen *ts, size_t *len)
{
	size_t cap = (size_t)ts->rows * ((size_t)ts->cols * VTERM_MAX_CHARS_PER_CELL * 4 + 1) + 1;
	char *text = xmalloc(cap);
	size_t n = 0;

	for (int r = 0; r < (int)ts->rows; r++) {
		n += render_row(ts, r, text + n);
		text[n++] = '\n';
	}
	text[n] = '\0';
	*len = n;
	return text;
}
