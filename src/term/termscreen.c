/* A terminal's screen through libvterm (see termscreen.h). The emulator only watches: what it
 * would answer to the program's queries is dropped, as an attached terminal answers them. REP
 * never reaches libvterm (termfilter.h): it is done here, as the glyph typed again. */
#include "termscreen.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vterm.h>

#include "log.h"
#include "termfilter.h"
#include "utf8.h"
#include "xmalloc.h"

/* Bytes filtered at a time: the filter's output for them sits on the stack. */
#define FEED_CHUNK 1024

struct termscreen {
	VTerm *vt;
	VTermScreen *screen;
	unsigned rows, cols;
	struct termfilter filter;
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
	termfilter_init(&ts->filter);
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

/* REP count: the last glyph again, as libvterm's REP would place it: from the cursor, not
 * past the end of the row. */
static void repeat(struct termscreen *ts, unsigned count)
{
	VTermState *state = vterm_obtain_state(ts->vt);
	const VTermLineInfo *info;
	unsigned width, rowwidth = ts->cols, copies;
	size_t len, per, done = 0;
	const char *glyph = termfilter_glyph(&ts->filter, &len, &width);
	char buf[FEED_CHUNK];
	VTermPos pos;

	if (len == 0)
		return; /* nothing to repeat yet: where libvterm would loop for ever */
	vterm_state_get_cursorpos(state, &pos);
	info = vterm_state_get_lineinfo(state, pos.row);
	if (info && info->doublewidth)
		rowwidth /= 2;
	if (pos.col < 0 || (unsigned)pos.col >= rowwidth)
		return;
	copies = rowwidth - (unsigned)pos.col;
	copies = (count < copies ? count : copies) / width;
	per = sizeof(buf) / len;
	while (done < copies) {
		size_t n = copies - done < per ? copies - done : per;

		for (size_t i = 0; i < n; i++)
			memcpy(buf + i * len, glyph, len);
		vterm_input_write(ts->vt, buf, n * len);
		done += n;
	}
}

/* Through the filter into libvterm; REP done here. */
static void filtered(struct termscreen *ts, const char *data, size_t len, bool check);

/* Brings libvterm's cursor back into the screen if it is outside (a cursor restored after the
 * screen shrank), with a cursor move it bounds. */
static void cursor_inside(struct termscreen *ts)
{
	VTermPos pos;
	char cup[32];
	int n;

	vterm_state_get_cursorpos(vterm_obtain_state(ts->vt), &pos);
	if (pos.row >= 0 && pos.col >= 0 && (unsigned)pos.row < ts->rows &&
	    (unsigned)pos.col < ts->cols)
		return;
	n = snprintf(cup, sizeof(cup), "\x1b[%d;%dH",
		     pos.row < 0		? 1
		     : pos.row >= (int)ts->rows ? (int)ts->rows
						: pos.row + 1,
		     pos.col < 0		? 1
		     : pos.col >= (int)ts->cols ? (int)ts->cols
						: pos.col + 1);
	/* through the filter, which so knows that this ends whatever sequence was open */
	termfilter_interrupt(&ts->filter);
	filtered(ts, cup, (size_t)n, false);
}

static void filtered(struct termscreen *ts, const char *data, size_t len, bool check)
{
	char out[TERMFILTER_OUT_MAX(FEED_CHUNK)];

	while (len) {
		size_t n = len < FEED_CHUNK ? len : FEED_CHUNK, outlen;
		unsigned rep;

		/* it stops after each escape sequence: the cursor is looked at before a glyph */
		n = termfilter_run(&ts->filter, data, n, out, &outlen, &rep);
		if (outlen)
			vterm_input_write(ts->vt, out, outlen);
		if (rep)
			repeat(ts, rep);
		if (check)
			cursor_inside(ts);
		data += n;
		len -= n;
	}
}

void termscreen_feed(struct termscreen *ts, const char *data, size_t len)
{
	filtered(ts, data, len, true);
}

void termscreen_resize(struct termscreen *ts, unsigned rows, unsigned cols)
{
	VTermPos pos;
	char reset[64];
	int n;

	ts->rows = rows;
	ts->cols = cols;
	vterm_set_size(ts->vt, (int)rows, (int)cols);
	/* libvterm bounds the bottom and right margins by the new size, not the top and left
	 * ones: a scroll region past the screen would scroll rows that are not there. Margins
	 * reset (as xterm resets them on a resize), and the cursor put back where it was, which
	 * resetting them moves. */
	vterm_state_get_cursorpos(vterm_obtain_state(ts->vt), &pos);
	n = snprintf(reset, sizeof(reset), "\x1b[r\x1b[s\x1b[%d;%dH", pos.row < 0 ? 1 : pos.row + 1,
		     pos.col < 0 ? 1 : pos.col + 1);
	termfilter_interrupt(&ts->filter);
	termscreen_feed(ts, reset, (size_t)n);
}

/* Appends row r at out; returns the bytes written (blanks at its end left out), and in *cells
 * the columns up to its last character. */
static size_t render_row(struct termscreen *ts, int r, char *out, unsigned *cells)
{
	size_t len = 0, kept = 0;

	*cells = 0;
	for (int c = 0; c < (int)ts->cols; c++) {
		VTermScreenCell cell;
		VTermPos pos = {r, c};

		if (!vterm_screen_get_cell(ts->screen, pos, &cell) || cell.chars[0] == (uint32_t)-1)
			continue; /* the right half of a wide character */
		if (!cell.chars[0] || (cell.chars[0] == ' ' && !cell.chars[1])) {
			out[len++] = ' ';
			continue;
		}
		for (int i = 0; i < VTERM_MAX_CHARS_PER_CELL && cell.chars[i]; i++)
			len += utf8_put(out + len, cell.chars[i]);
		kept = len;
		*cells = (unsigned)(c + (cell.width > 1 ? cell.width : 1));
	}
	return kept;
}

struct termsnap *termscreen_render(struct termscreen *ts)
{
	size_t cap = (size_t)ts->rows * ((size_t)ts->cols * VTERM_MAX_CHARS_PER_CELL * 4 + 1);
	struct termsnap *s = xmalloc(sizeof(*s) + cap + 1);
	VTermPos cursor;
	size_t n = 0;

	vterm_state_get_cursorpos(vterm_obtain_state(ts->vt), &cursor);
	*s = (struct termsnap){.refs = 1, .rows = ts->rows, .cols = ts->cols};
	/* in the screen: the filter keeps what moved libvterm's cursor out of it away (the fuzz
	 * target fuzz_vterm checks it) */
	s->cursor_row = (unsigned)cursor.row;
	s->cursor_col = (unsigned)cursor.col;
	for (int r = 0; r < (int)ts->rows; r++) {
		unsigned cells;

		n += render_row(ts, r, s->text + n, &cells);
		if ((unsigned)r == s->cursor_row && s->cursor_col > cells)
			s->pad = s->cursor_col - cells;
		s->text[n++] = '\n';
	}
	s->text[n] = '\0';
	s->len = n;
	/* most screens are far smaller than the room a screen of 6-mark cells needs */
	return xrealloc(s, sizeof(*s) + n + 1);
}
