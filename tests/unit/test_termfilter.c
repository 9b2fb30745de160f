/* Unit tests: the filter in front of libvterm (src/term/termfilter.c) and the screen behind it
 * (termscreen.c): the inputs that hang or corrupt libvterm 0.1.4 render instead, REP still
 * repeats, and every code point the linked libvterm combines counts as a possible mark. */
#include <stdio.h>
#include <string.h>
#include <vterm.h>

#include "check.h"
#include "termfilter.h"
#include "termscreen.h"
#include "utf8.h"

/* The screen after feeding data whole, and again cut into pieces of every size from 1 to 7:
 * both must render the same. */
static struct termsnap *render(const char *data, size_t len, unsigned rows, unsigned cols)
{
	struct termsnap *whole = NULL;

	for (size_t piece = 0; piece <= 7; piece++) {
		struct termscreen *ts = termscreen_new(rows, cols);
		struct termsnap *s;

		for (size_t at = 0; at < len; at += piece ? piece : len)
			termscreen_feed(ts, data + at,
					piece && len - at > piece ? piece : len - at);
		s = termscreen_render(ts);
		termscreen_free(ts);
		CHECK(s->cursor_row < rows && s->cursor_col < cols);
		if (!whole) {
			whole = s;
			continue;
		}
		if (s->len != whole->len || memcmp(s->text, whole->text, s->len)) {
			fprintf(stderr, "fed %zu at a time:\n%s\nwhole:\n%s\n", piece, s->text,
				whole->text);
			CHECK(false);
		}
		termsnap_unref(s);
	}
	return whole;
}

static bool first_line_is(const char *data, size_t len, const char *want)
{
	struct termsnap *s = render(data, len, 4, 20);
	bool ok = !strncmp(s->text, want, strlen(want)) && s->text[strlen(want)] == '\n';

	if (!ok)
		fprintf(stderr, "%s\nwanted %s\n", s->text, want);
	termsnap_unref(s);
	return ok;
}

#define FIRST_LINE(lit, want) first_line_is(lit, sizeof(lit) - 1, want)

static void test_rep(void)
{
	CHECK(FIRST_LINE("\x1b[b", ""));		  /* nothing to repeat: libvterm looped */
	CHECK(FIRST_LINE("\xcc\x81\x1b[3b", "\xcc\x81")); /* a lone mark: width 0, looped */
	CHECK(FIRST_LINE("ab\x1b[3bc", "abbbbc"));
	CHECK(FIRST_LINE("x\x1b[b", "xx"));
	CHECK(FIRST_LINE("x\x1b[0b", "xx"));	   /* 0 counts as 1 */
	CHECK(FIRST_LINE("x\x1b[5:2b", "xxxxxx")); /* a sub-parameter */
	CHECK(FIRST_LINE("ab\x1b[?3b", "ab"));	   /* with a leader: not REP */
	CHECK(FIRST_LINE("ab\x1b[3 b", "ab"));	   /* with an intermediate: not REP */
	CHECK(FIRST_LINE("e\xcc\x81\x1b[2b", "e\xcc\x81"
					     "e\xcc\x81"
					     "e\xcc\x81")); /* a glyph */
	CHECK(FIRST_LINE("\xe4\xb8\xad\x1b[4b", "\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad"));
	/* not past the end of the row, as libvterm's REP */
	CHECK(FIRST_LINE("\x1b[18Gz\x1b[999999999999b", "                 zzz"));
	/* a b inside a string is the string's; ESC [ there ends the string and starts a CSI, as
	 * libvterm's parser has it */
	CHECK(FIRST_LINE("a\x1b]0;[3b\x07q", "aq"));
	CHECK(FIRST_LINE("a\x1b]0;\x1b[b\x07q", "aaq"));
	CHECK(FIRST_LINE("\x1bPq\x1b[b", ""));
	CHECK(FIRST_LINE("k\x1b[1\x1b[b", "kk")); /* ESC cancels a CSI, then a REP */
	CHECK(FIRST_LINE("k\x1b[2\x07"
			 "b",
			 "kkk")); /* a control inside a CSI acts, the CSI goes on */
}

static void test_utf8(void)
{
	/* a C1 code point as UTF-8 had width -1: the cursor walked left of column 0 */
	CHECK(FIRST_LINE("x\xc2\x80\xc2\x80\xc2\x80y", "x\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdy"));
	/* ... also with its bytes apart */
	CHECK(FIRST_LINE("x\xc2\x1b[m\x80y", "x\xef\xbf\xbd\xef\xbf\xbdy"));
	CHECK(FIRST_LINE("x\xc2\x7f\x80y", "x\xef\xbf\xbd\xef\xbf\xbdy"));
	CHECK(FIRST_LINE("\xc3\xa9t\xc3\xa9", "\xc3\xa9t\xc3\xa9"));
	CHECK(FIRST_LINE("\xf0\x9f\x99\x82!", "\xf0\x9f\x99\x82!"));
	CHECK(FIRST_LINE("\xe0\x80\xaf", "\xef\xbf\xbd"));     /* overlong */
	CHECK(FIRST_LINE("\xed\xa0\x80", "\xef\xbf\xbd"));     /* a surrogate */
	CHECK(FIRST_LINE("\xf4\x90\x80\x80", "\xef\xbf\xbd")); /* past U+10FFFF */
	CHECK(FIRST_LINE("\xff\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"));
}

static void test_many_parameters(void)
{
	char csi[512];
	int n = snprintf(csi, sizeof(csi), "\x1b[");

	/* 40 parameters: libvterm wrote past its 16 over its callback pointer */
	for (int i = 1; i <= 40; i++)
		n += snprintf(csi + n, sizeof(csi) - (size_t)n, "%d;", i);
	n += snprintf(csi + n, sizeof(csi) - (size_t)n, "1mok\x1b[;;;;;;;;;;;;;;;;;;;;;;;;;;Hk");
	CHECK(first_line_is(csi, (size_t)n, "kk"));
	/* the first 16 still act: 3;3 is row 3, column 3 */
	CHECK(FIRST_LINE("\x1b[3;3;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1H\x1b[Hz", "z"));
}

static void test_marks(void)
{
	char flood[3 * 4000 + 2];
	struct termfilter f;
	char out[TERMFILTER_OUT_MAX(sizeof(flood))];
	size_t outlen, marks = 0;
	unsigned rep;

	flood[0] = 'a';
	for (size_t i = 0; i < 4000; i++)
		memcpy(flood + 1 + 3 * i, "\xcc\x81\x00", 3);
	flood[sizeof(flood) - 1] = 'b';
	termfilter_init(&f);
	CHECK(termfilter_run(&f, flood, sizeof(flood), out, &outlen, &rep) == sizeof(flood));
	CHECK(rep == 0 && out[outlen - 1] == 'b');
	for (size_t i = 0; i + 1 < outlen; i++)
		marks += out[i] == '\xcc';
	CHECK(marks == TERMFILTER_MARKS);
	CHECK(termfilter_maybe_mark(0x0301) && termfilter_maybe_mark(0x200b));
	CHECK(!termfilter_maybe_mark('a') && !termfilter_maybe_mark(0x4e2d));
	CHECK(termfilter_width(0x4e2d) == 2 && termfilter_width(0xe9) == 1);
}

/* Shrinking leaves libvterm a cursor saved below the screen, a scroll region past it, a UTF-8
 * sequence open: nothing of it may put a glyph outside. */
static void test_shrink(void)
{
	static const char *const before[] = {"\x1b[20;5H\x1b"
					     "7",
					     "\x1b[20;5H\x1b[?1049h", "\x1b[15;20r\x1b[?6h",
					     "\x1b[20;70H\xe4", "\x1b[?69h\x1b[50;70s\x1b[20;75H"};
	static const char *const after[] = {"\x1b"
					    "8X",
					    "\x1b[?1049lX", "\n\n\n\n\n\n\nX", "\xb8\xadX",
					    "\x1b[?1049h\x1b"
					    "8\x1b[LX"};

	for (size_t i = 0; i < sizeof(before) / sizeof(before[0]); i++) {
		for (size_t j = 0; j < sizeof(after) / sizeof(after[0]); j++) {
			struct termscreen *ts = termscreen_new(24, 80);
			struct termsnap *s;

			termscreen_feed(ts, before[i], strlen(before[i]));
			termscreen_resize(ts, 5, 10);
			termscreen_feed(ts, after[j], strlen(after[j]));
			s = termscreen_render(ts);
			CHECK(s->rows == 5 && s->cursor_row < 5 && s->cursor_col < 10);
			CHECK(strchr(s->text, 'X') != NULL);
			termsnap_unref(s);
			termscreen_free(ts);
		}
	}
	/* a DCS reaches libvterm empty: no query is answered, nothing shows */
	CHECK(FIRST_LINE("\x1bP$qe\x1b\\a\x1bP$qm\x07"
			 "b",
			 "ab"));
}

/* The filter's mark test must cover every code point libvterm (unfiltered) combines with the
 * character before it: else a stream of that one would grow libvterm's buffer without end. */
static void test_marks_cover_libvterm(void)
{
	VTerm *vt = vterm_new(2, 20);
	VTermScreen *screen = vterm_obtain_screen(vt);
	unsigned missed = 0;

	vterm_set_utf8(vt, 1);
	vterm_screen_reset(screen, 1);
	for (uint32_t cp = 0xa0; cp <= 0x10ffff; cp++) {
		char buf[16] = "\ra";
		size_t n = 2 + utf8_put(buf + 2, cp);
		VTermScreenCell cell;
		VTermPos at = {0, 0};

		if ((cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff)
			continue;
		vterm_input_write(vt, buf, n);
		vterm_screen_get_cell(screen, at, &cell);
		if (cell.chars[1] == cp && !termfilter_maybe_mark(cp) && missed++ < 10)
			fprintf(stderr, "libvterm combines U+%04X; the filter does not count it\n",
				cp);
		vterm_input_write(vt, "\r\x1b[K", 4);
	}
	vterm_free(vt);
	CHECK(missed == 0);
}

int main(void)
{
	test_rep();
	test_utf8();
	test_many_parameters();
	test_marks();
	test_shrink();
	test_marks_cover_libvterm();
	return check_done();
}
