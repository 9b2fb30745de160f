/* The filter in front of libvterm (see termfilter.h). Its states and transitions are those of
 * libvterm 0.1.4's parser (NUL and DEL ignored everywhere; CAN and SUB cancel; ESC starts an
 * escape, or may end a string; other C0 controls act without changing the state; ESC [ starts
 * a CSI, ESC P and ESC ] a string that BEL or ESC \ ends; a byte of 0x80 and more only goes to
 * the UTF-8 decoder in the ground state), so that what it sees as a REP is what libvterm
 * would have run as one. */
#include "termfilter.h"

#include <locale.h>
#include <pthread.h>
#include <string.h>
#include <wchar.h>

#include "log.h"

enum {
	S_NORMAL,
	S_ESC,
	S_CSI_LEADER,
	S_CSI_ARGS,
	S_CSI_INTERMED,
	S_STRING,
	S_ESC_IN_STRING,
};

#define CAN 0x18
/* libvterm's CSI parameter array */
#define CSI_ARGS_MAX 16
/* digits of a parameter passed: 999999999 plus a column still fits an int */
#define DIGITS_MAX 9

static const uint8_t replacement[] = {0xef, 0xbf, 0xbd}; /* U+FFFD */

static pthread_once_t locale_once = PTHREAD_ONCE_INIT;
static locale_t c_utf8;

static void open_locale(void)
{
	c_utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	if (!c_utf8)
		log_warnx(
		    "no C.UTF-8 locale: terminals show at most %d non-ASCII characters in a row",
		    TERMFILTER_MARKS + 1);
}

/* glibc's wcwidth in C.UTF-8, whatever the thread's locale; -2 without that locale. */
static int glibc_width(uint32_t cp)
{
	locale_t old;
	int w;

	pthread_once(&locale_once, open_locale);
	if (!c_utf8)
		return -2;
	old = uselocale(c_utf8);
	w = wcwidth((wchar_t)cp);
	uselocale(old);
	return w;
}

bool termfilter_maybe_mark(uint32_t cp)
{
	/* Marks of Unicode 5 that libvterm's tables still combine and newer Unicode (glibc's)
	 * made spacing or symbols: found by comparing the two over every code point, which
	 * test_termfilter does again against the libvterm it is linked with. */
	static const uint32_t old_marks[][2] = {{0x0600, 0x0603},
						{0x06dd, 0x06de},
						{0x070f, 0x070f},
						{0x1734, 0x1734},
						{0x302e, 0x302f}};

	if (cp < 0x80)
		return false;
	for (size_t i = 0; i < sizeof(old_marks) / sizeof(old_marks[0]); i++)
		if (cp >= old_marks[i][0] && cp <= old_marks[i][1])
			return true;
	return glibc_width(cp) <= 0;
}

unsigned termfilter_width(uint32_t cp)
{
	return glibc_width(cp) == 2 ? 2 : 1;
}

void termfilter_init(struct termfilter *f)
{
	memset(f, 0, sizeof(*f));
}

void termfilter_interrupt(struct termfilter *f)
{
	f->u8len = 0;
}

const char *termfilter_glyph(const struct termfilter *f, size_t *len, unsigned *width)
{
	*len = f->glyphlen;
	*width = f->glyphwidth;
	return f->glyph;
}

struct out {
	char *p;
	size_t n;
};

static void emit(struct out *o, const void *b, size_t n)
{
	memcpy(o->p + o->n, b, n);
	o->n += n;
}

static void emit_byte(struct out *o, uint8_t c)
{
	o->p[o->n++] = (char)c;
}

/* A whole code point in the ground state, its UTF-8 in b. */
static void code_point(struct termfilter *f, struct out *o, uint32_t cp, const uint8_t *b, size_t n)
{
	if (cp >= 0x80 && cp < 0xa0) { /* C1 as UTF-8: libvterm gives it width -1 */
		cp = 0xfffd;
		b = replacement;
		n = sizeof(replacement);
	}
	if (termfilter_maybe_mark(cp)) {
		if (f->marks >= TERMFILTER_MARKS)
			return;
		f->marks++;
		emit(o, b, n);
		if (f->glyphlen && f->glyphlen + n <= sizeof(f->glyph)) {
			memcpy(f->glyph + f->glyphlen, b, n);
			f->glyphlen = (uint8_t)(f->glyphlen + n);
		}
		return;
	}
	emit(o, b, n);
	memcpy(f->glyph, b, n);
	f->glyphlen = (uint8_t)n;
	f->glyphwidth = (uint8_t)(cp < 0x80 ? 1 : termfilter_width(cp));
	f->marks = 0;
}

static void broken(struct termfilter *f, struct out *o)
{
	f->u8len = 0;
	code_point(f, o, 0xfffd, replacement, sizeof(replacement));
}

static void utf8_complete(struct termfilter *f, struct out *o)
{
	static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
	uint32_t cp = f->u8[0] & (0x7f >> f->u8need);

	for (unsigned i = 1; i < f->u8need; i++)
		cp = cp << 6 | (f->u8[i] & 0x3f);
	f->u8len = 0;
	if (cp < least[f->u8need] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff ||
	    cp == 0xfffe || cp == 0xffff) {
		code_point(f, o, 0xfffd, replacement, sizeof(replacement));
		return;
	}
	code_point(f, o, cp, f->u8, f->u8need);
}

/* A byte of 0x80 or more in the ground state. */
static void utf8_byte(struct termfilter *f, struct out *o, uint8_t c)
{
	if (f->u8len && (c & 0xc0) == 0x80) {
		f->u8[f->u8len++] = c;
		if (f->u8len == f->u8need)
			utf8_complete(f, o);
		return;
	}
	if (c >= 0xc2 && c <= 0xdf)
		f->u8need = 2;
	else if (c >= 0xe0 && c <= 0xef)
		f->u8need = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		f->u8need = 4;
	else { /* a stray continuation, an overlong or out-of-range lead */
		broken(f, o);
		return;
	}
	f->u8[0] = c;
	f->u8len = 1;
}

static void csi_start(struct termfilter *f)
{
	f->state = S_CSI_LEADER;
	f->nsep = 0;
	f->ndigits = 0;
	f->dropping = false;
	f->marked = false;
	f->count = 0;
}

/* A byte of a CSI's parameters: passed, or dropped past what libvterm holds. */
static void csi_param(struct termfilter *f, struct out *o, uint8_t c)
{
	if (f->dropping)
		return;
	if (c == ':' || c == ';') {
		if (f->nsep + 1 >= CSI_ARGS_MAX) {
			f->dropping = true;
			return;
		}
		f->nsep++;
		f->ndigits = 0;
	} else {
		if (f->ndigits >= DIGITS_MAX)
			return;
		f->ndigits++;
		if (f->nsep == 0)
			f->count = f->count * 10 + (uint32_t)(c - '0');
	}
	emit_byte(o, c);
}

size_t termfilter_run(struct termfilter *f, const char *in, size_t len, char *out, size_t *outlen,
		      unsigned *rep)
{
	struct out o = {out, 0};

	*rep = 0;
	for (size_t i = 0; i < len; i++) {
		uint8_t c = (uint8_t)in[i];

		/* a UTF-8 sequence cut by anything but its continuation is one U+FFFD */
		if (f->u8len && (c & 0xc0) != 0x80)
			broken(f, &o);
		if (c == 0x00 || c == 0x7f) {
			emit_byte(&o, c);
			continue;
		}
		if (c == 0x18 || c == 0x1a) {
			emit_byte(&o, c);
			f->state = S_NORMAL;
			continue;
		}
		if (c == 0x1b) {
			emit_byte(&o, c);
			f->state = f->state == S_STRING ? S_ESC_IN_STRING : S_ESC;
			continue;
		}
		if (c < 0x20 && !(c == 0x07 && f->state == S_STRING)) {
			emit_byte(&o, c);
			continue;
		}
		switch (f->state) {
		case S_ESC_IN_STRING:
			if (c == '\\') {
				emit_byte(&o, c);
				f->state = S_NORMAL;
				break;
			}
			f->state = S_ESC;
			/* fallthrough */
		case S_ESC:
			emit_byte(&o, c);
			if (c == 'P' || c == ']') {
				f->state = S_STRING;
				f->dcs = c == 'P';
			} else if (c == '[') {
				csi_start(f);
			} else if (c >= 0x30 && c < 0x7f) {
				f->state = S_NORMAL;
				*outlen = o.n;
				return i + 1;
			}
			/* intermediates, and bytes libvterm drops, keep the escape going */
			break;
		case S_CSI_LEADER:
			if (c >= 0x3c && c <= 0x3f) {
				emit_byte(&o, c);
				f->marked = true;
				break;
			}
			f->state = S_CSI_ARGS;
			/* fallthrough */
		case S_CSI_ARGS:
			if ((c >= '0' && c <= '9') || c == ':' || c == ';') {
				csi_param(f, &o, c);
				break;
			}
			f->state = S_CSI_INTERMED;
			/* fallthrough */
		case S_CSI_INTERMED:
			if (c >= 0x20 && c <= 0x2f) {
				emit_byte(&o, c);
				f->marked = true;
				break;
			}
			f->state = S_NORMAL;
			if (c < 0x40 || c > 0x7e) { /* not a final byte: libvterm drops the CSI */
				emit_byte(&o, c);
				break;
			}
			/* REP, or a CSI libvterm ignores: cancelled either way */
			emit_byte(&o, c == 'b' ? CAN : c);
			if (c == 'b' && !f->marked)
				*rep = f->count ? f->count : 1;
			*outlen = o.n;
			return i + 1;
		case S_STRING:
			/* a DCS goes on empty: libvterm only answers queries there (DECRQSS, whose
			 * unknown request it formats with "%.s" and no string) and its answers are
			 * dropped anyway */
			if (!f->dcs || c == 0x07)
				emit_byte(&o, c);
			if (c == 0x07)
				f->state = S_NORMAL;
			break;
		default:
			if (c < 0x80)
				code_point(f, &o, c, &c, 1);
			else
				utf8_byte(f, &o, c);
			break;
		}
	}
	*outlen = o.n;
	return len;
}
