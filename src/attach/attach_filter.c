/* sbxfs attach: the filter between what the sandbox prints (its out stream, and the screen
 * replayed at attach) and the user's own terminal, which must not take orders from it.
 *
 * A streaming filter over ECMA-48 rather than a redraw from the daemon's emulator (the screen
 * file): the sandbox's own drawing reaches the user as it was sent, with its colours, scroll
 * regions and the alternate screen, at no cost but one pass over the bytes. What the user's
 * terminal sees is only text and an allowlist of sequences that draw or set a mode that
 * attach_tty_reset_modes undoes, the ones a full-screen program needs (a subset of those
 * tmux's input.c handles itself). Everything else is dropped whole, as a terminal would parse
 * it: every OSC, DCS, SOS, PM and APC string (the clipboard, titles, colours, hyperlinks,
 * DECRQSS, XTGETTCAP), every query or report request (DSR, DA, window ops, DECRQM, XTVERSION,
 * ENQ, DECID), resets and charset switches, and anything unknown or malformed. So the user's
 * terminal never answers, and nothing it would say reaches the sandbox.
 *
 * Input is decoded as UTF-8 first, as the user's terminal and the daemon's emulator read it: a
 * character split across reads waits for its end, and an invalid byte becomes U+FFFD, raw 8-bit
 * C1 controls (0x80-0x9f) among them, so the output is valid UTF-8 and never holds one. The C1
 * controls encoded in UTF-8 (U+0080-U+009F, which xterm obeys) count as their ESC forms, and
 * what passes is written in the 7-bit form. A user's terminal that does not read UTF-8 gets '?'
 * for each character beyond ASCII, as tmux does: it would take bytes of UTF-8 (as 0x9d of
 * U+201D) for C1 controls. */
#include "attach.h"
#include "utf8.h"

#include <string.h>

enum { GROUND, ESCAPE, CSI, CSI_IGNORE, STRING, STRING_ESC };

#define ESC	    0x1b
#define REPLACEMENT 0xfffd
/* A larger number is no row, column or colour: it is dropped, not clamped by each terminal. */
#define PARAM_DIGITS 5

/* The CSI final bytes that draw, with no private marker nor intermediate: cursor moves,
 * erases, insert and delete, scrolling, tab stops, repeat, SGR, the scroll region, cursor
 * save and restore. */
static const char plain_finals[] = "@ABCDEFGHJKLMPSTXZ`bdfgmrsu";

/* DEC private modes (CSI ? Ps h/l): cursor keys, autowrap, cursor shown, the alternate
 * screens, mouse and focus reports, bracketed paste, synchronized output. Not DECCOLM (it
 * resizes the user's window) nor others attach cannot undo at its end (origin mode: resetting
 * it homes the cursor). */
static const unsigned dec_modes[] = {1,	   7,	 25,   47,   1000, 1002, 1003,
				     1004, 1006, 1047, 1049, 2004, 2026};

struct sink {
	char *out;
	size_t n;
};

static void put(struct sink *o, char c)
{
	o->out[o->n++] = c;
}

static void put_utf8(struct sink *o, uint32_t c)
{
	o->n += utf8_put(o->out + o->n, c);
}

static void put_number(struct sink *o, unsigned v)
{
	char digits[PARAM_DIGITS];
	size_t n = 0;

	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		put(o, digits[--n]);
}

/* C0 controls: BEL, BS, HT, LF, VT, FF and CR pass; ENQ (it asks for the answerback), SO and
 * SI (they switch the character set) and the rest do not. */
static void control(uint32_t c, struct sink *o)
{
	if (c == 0x07 || (c >= 0x08 && c <= 0x0d))
		put(o, (char)c);
}

static void start_escape(struct attach_filter *f)
{
	f->state = ESCAPE;
	f->ninter = 0;
}

static void add_inter(struct attach_filter *f, uint32_t c)
{
	if (f->ninter < ATTACH_FILTER_INTER)
		f->inter[f->ninter] = (char)c;
	f->ninter++; /* counted beyond what is kept: no sequence with that many passes */
}

static void esc_dispatch(struct attach_filter *f, uint32_t c, struct sink *o)
{
	f->state = GROUND;
	if (f->ninter == 0) {
		switch (c) {
		case '[':
			f->state = CSI;
			f->prefix = 0;
			f->nparams = 0;
			return;
		case ']':
		case 'P':
		case 'X':
		case '^':
		case '_':
			f->state = STRING;
			f->osc = c == ']';
			return;
		case '7': /* DECSC, DECRC, keypad modes, IND, NEL, HTS, RI */
		case '8':
		case '=':
		case '>':
		case 'D':
		case 'E':
		case 'H':
		case 'M':
			put(o, ESC);
			put(o, (char)c);
		}
		return;
	}
	/* G0 as line drawing or ASCII (what ncurses switches for box lines), DECALN. */
	if (f->ninter == 1 &&
	    ((f->inter[0] == '(' && (c == '0' || c == 'B')) || (f->inter[0] == '#' && c == '8'))) {
		put(o, ESC);
		put(o, f->inter[0]);
		put(o, (char)c);
	}
}

static void csi_param(struct attach_filter *f, uint32_t c)
{
	if (c >= '<' && c <= '?') { /* a private marker, valid only first */
		if (f->prefix || f->nparams || f->ninter)
			f->state = CSI_IGNORE;
		else
			f->prefix = (char)c;
	} else if (f->ninter || f->nparams == ATTACH_FILTER_PARAMS) {
		f->state = CSI_IGNORE;
	} else {
		f->params[f->nparams++] = (char)c;
	}
}

/* The parameters as numbers (an empty one is 0): their count, or -1 if one is not a plain
 * number of at most PARAM_DIGITS digits (':' separates them only in SGR). */
static int parse_params(const struct attach_filter *f, bool colons, unsigned *v)
{
	size_t digits = 0;
	int n = 0;

	if (f->nparams == 0)
		return 0;
	v[0] = 0;
	for (size_t i = 0; i < f->nparams; i++) {
		char c = f->params[i];

		if (c >= '0' && c <= '9') {
			if (++digits > PARAM_DIGITS)
				return -1;
			v[n] = v[n] * 10 + (unsigned)(c - '0');
		} else if (c == ';' || (colons && c == ':')) {
			v[++n] = 0;
			digits = 0;
		} else {
			return -1;
		}
	}
	return n + 1;
}

static bool mode_allowed(char prefix, unsigned mode)
{
	if (!prefix)
		return mode == 4; /* IRM, for the insertions of vi's and readline's redraws */
	for (size_t i = 0; i < sizeof(dec_modes) / sizeof(dec_modes[0]); i++) {
		if (dec_modes[i] == mode)
			return true;
	}
	return false;
}

static void put_csi_head(struct attach_filter *f, struct sink *o)
{
	put(o, ESC);
	put(o, '[');
	if (f->prefix)
		put(o, f->prefix);
}

/* SM and RM keep the modes of the allowlist, each of the others dropped from the list. */
static void put_modes(struct attach_filter *f, const unsigned *v, int n, uint32_t fin,
		      struct sink *o)
{
	bool any = false;

	for (int i = 0; i < n; i++) {
		if (!mode_allowed(f->prefix, v[i]))
			continue;
		if (!any)
			put_csi_head(f, o);
		else
			put(o, ';');
		put_number(o, v[i]);
		any = true;
	}
	if (any)
		put(o, (char)fin);
}

static void csi_dispatch(struct attach_filter *f, uint32_t fin, struct sink *o)
{
	unsigned v[ATTACH_FILTER_PARAMS + 1];
	int n = parse_params(f, fin == 'm' && !f->prefix, v);
	bool pass = false;

	f->state = GROUND;
	if (n < 0)
		return;
	if ((fin == 'h' || fin == 'l') && f->ninter == 0 && (!f->prefix || f->prefix == '?')) {
		put_modes(f, v, n, fin, o);
		return;
	}
	/* DECSCUSR, the cursor's shape. */
	if (f->ninter == 1 && f->inter[0] == ' ' && fin == 'q')
		pass = !f->prefix && n <= 1 && (n == 0 || v[0] <= 6);
	/* Not ED 3, which erases the user's scrollback, nor SD with the 5 parameters that
	 * start xterm's highlight mouse tracking. */
	if (f->ninter == 0 && !f->prefix && strchr(plain_finals, (int)fin))
		pass = (fin != 'J' || n == 0 || v[0] <= 2) && (fin != 'T' || n <= 1);
	if (!pass)
		return;
	put_csi_head(f, o);
	for (size_t i = 0; i < f->nparams; i++)
		put(o, f->params[i]);
	if (f->ninter == 1)
		put(o, f->inter[0]);
	put(o, (char)fin);
}

/* One character, decoded: the parser of ECMA-48 (as in vt100.net's DEC parser) that decides
 * what passes. */
static void parse(struct attach_filter *f, uint32_t c, struct sink *o)
{
	if (c == 0x18 || c == 0x1a) { /* CAN and SUB cancel a sequence */
		f->state = GROUND;
		return;
	}
	if (c == ESC) { /* ends a string (ESC \ is ST), or cancels a sequence for its own */
		if (f->state == STRING) {
			f->state = STRING_ESC;
		} else {
			start_escape(f);
		}
		return;
	}
	if (c >= 0x80 && c <= 0x9f) { /* C1, from its UTF-8 form */
		start_escape(f);
		esc_dispatch(f, c - 0x40, o);
		return;
	}
	switch (f->state) {
	case GROUND:
		if (c < 0x20)
			control(c, o);
		else if (c >= 0x80 && !f->utf8)
			put(o, '?');
		else if (c != 0x7f)
			put_utf8(o, c);
		break;
	case STRING_ESC:
		if (c == '\\') {
			f->state = GROUND;
			break;
		}
		start_escape(f);
		parse(f, c, o);
		break;
	case ESCAPE:
		if (c < 0x20) {
			control(c, o);
		} else if (c < 0x30) {
			add_inter(f, c);
		} else if (c < 0x7f) {
			esc_dispatch(f, c, o);
		} else if (c > 0x7f) { /* no sequence: the character alone */
			f->state = GROUND;
			parse(f, c, o);
		}
		break;
	case CSI:
		if (c < 0x20)
			control(c, o);
		else if (c < 0x30)
			add_inter(f, c);
		else if (c < 0x40)
			csi_param(f, c);
		else if (c < 0x7f)
			csi_dispatch(f, c, o);
		else if (c > 0x7f)
			f->state = CSI_IGNORE;
		break;
	case CSI_IGNORE:
		if (c < 0x20)
			control(c, o);
		else if (c >= 0x40 && c < 0x7f)
			f->state = GROUND;
		break;
	case STRING:
		if (c == 0x07 && f->osc) /* xterm's other end of an OSC */
			f->state = GROUND;
		break;
	}
}

/* One byte into the UTF-8 decoder, and each character it completes into the parser. */
static void feed(struct attach_filter *f, unsigned char b, struct sink *o)
{
	if (f->due) {
		if (b >= f->lo && b <= f->hi) {
			f->cp = f->cp << 6 | (b & 0x3f);
			f->lo = 0x80;
			f->hi = 0xbf;
			if (--f->due == 0)
				parse(f, f->cp, o);
			return;
		}
		f->due = 0; /* the character cut short, then b on its own */
		parse(f, REPLACEMENT, o);
	}
	f->lo = 0x80;
	f->hi = 0xbf;
	if (b < 0x80) {
		parse(f, b, o);
	} else if (b >= 0xc2 && b <= 0xdf) {
		f->cp = b & 0x1f;
		f->due = 1;
	} else if (b >= 0xe0 && b <= 0xef) {
		f->cp = b & 0x0f;
		f->due = 2;
		f->lo = b == 0xe0 ? 0xa0 : 0x80; /* not overlong */
		f->hi = b == 0xed ? 0x9f : 0xbf; /* not a surrogate */
	} else if (b >= 0xf0 && b <= 0xf4) {
		f->cp = b & 0x07;
		f->due = 3;
		f->lo = b == 0xf0 ? 0x90 : 0x80; /* not overlong */
		f->hi = b == 0xf4 ? 0x8f : 0xbf; /* not beyond U+10FFFF */
	} else {
		parse(f, REPLACEMENT, o);
	}
}

void attach_filter_init(struct attach_filter *f, bool utf8)
{
	memset(f, 0, sizeof(*f));
	f->state = GROUND;
	f->utf8 = utf8;
}

size_t attach_filter_run(struct attach_filter *f, const char *in, size_t len, char *out)
{
	struct sink o = {.out = out};

	for (size_t i = 0; i < len; i++)
		feed(f, (unsigned char)in[i], &o);
	return o.n;
}
