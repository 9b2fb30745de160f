/* Unit tests: the filter between a sandbox terminal's output and the user's terminal
 * (src/attach/attach_filter.c). Each input goes through in one call, byte by byte, and cut in
 * two at every place: all must give the same output, the expected one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach.h"
#include "check.h"

/* The output of in through a fresh filter, cut at the places in cuts (ascending, then 0). */
static size_t filter_cut(const char *in, size_t len, const size_t *cuts, bool utf8, char *out)
{
	struct attach_filter f;
	size_t from = 0, n = 0;

	attach_filter_init(&f, utf8);
	for (; *cuts; cuts++) {
		n += attach_filter_run(&f, in + from, *cuts - from, out + n);
		from = *cuts;
	}
	return n + attach_filter_run(&f, in + from, len - from, out + n);
}

static void show(const char *what, const char *s, size_t len)
{
	fprintf(stderr, "  %s: \"", what);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c < 0x7f && c != '\\')
			fputc(c, stderr);
		else
			fprintf(stderr, "\\x%02x", c);
	}
	fprintf(stderr, "\"\n");
}

static bool same(const char *in, size_t len, const char *got, size_t n, const char *want,
		 size_t wlen, const char *how)
{
	if (n == wlen && memcmp(got, want, n) == 0)
		return true;
	fprintf(stderr, "filtered %s:\n", how);
	show("in  ", in, len);
	show("got ", got, n);
	show("want", want, wlen);
	return false;
}

static bool filters_to_as(const char *in, size_t len, const char *want, size_t wlen, bool utf8)
{
	char *out = malloc(ATTACH_FILTER_OUT_MAX(len));
	size_t *cuts = calloc(len + 1, sizeof(*cuts)), n;
	bool ok;

	n = filter_cut(in, len, cuts, utf8, out);
	ok = same(in, len, out, n, want, wlen, "in one call");
	for (size_t i = 1; i < len; i++)
		cuts[i - 1] = i;
	n = filter_cut(in, len, cuts, utf8, out);
	ok = ok && same(in, len, out, n, want, wlen, "byte by byte");
	for (size_t cut = 1; ok && cut < len; cut++) {
		size_t two[2] = {cut, 0};

		n = filter_cut(in, len, two, utf8, out);
		ok = same(in, len, out, n, want, wlen, "in two");
	}
	free(cuts);
	free(out);
	return ok;
}

#define FILTERS(in, want) CHECK(filters_to_as(in, sizeof(in) - 1, want, sizeof(want) - 1, true))
#define DROPPED(seq)	  FILTERS("a" seq "b", "ab")
#define PASSES(seq)	  FILTERS("a" seq "b", "a" seq "b")
#define FILTERS_ASCII(in, want)                                                                    \
	CHECK(filters_to_as(in, sizeof(in) - 1, want, sizeof(want) - 1, false))

static void strings(void)
{
	/* OSC: the clipboard, titles, colours and their queries, hyperlinks, fonts; with BEL,
	 * ST, and 8-bit ST. */
	DROPPED("\033]52;c;cHduZWQ=\a");
	DROPPED("\033]52;c;cHduZWQ=\033\\");
	DROPPED("\033]52;c;?\a");
	DROPPED("\033]0;evil\a");
	DROPPED("\033]2;evil\033\\");
	DROPPED("\033]1;icon\a");
	DROPPED("\033]4;1;?\a");
	DROPPED("\033]4;1;rgb:ff/00/00\a");
	DROPPED("\033]10;?\a");
	DROPPED("\033]11;?\033\\");
	DROPPED("\033]50;?\a");
	DROPPED("\033]7;file://host/etc\a");
	DROPPED("\033]1337;File=inline=1:AAAA\a");
	/* A raw 0x9c is no ST (nor a character: the string goes on). */
	FILTERS("a\033]0;t\234-b", "a");
	FILTERS("a\033]8;;http://x/\033\\link\033]8;;\033\\b", "alinkb");
	/* DCS: XTGETTCAP, DECRQSS, sixel, tmux passthrough; APC (kitty graphics), PM, SOS. */
	DROPPED("\033P+q544e\033\\");
	DROPPED("\033P$qm\033\\");
	DROPPED("\033P$q\"p\033\\");
	DROPPED("\033P0;0;0q#0~~-~~\033\\");
	DROPPED("\033Ptmux;\033\033]52;c;eA==\a\033\\");
	DROPPED("\033_Gf=100;AAAA\033\\");
	DROPPED("\033^private\033\\");
	DROPPED("\033Xstring\033\\");
	/* C0 controls in a string are part of it; BEL ends only an OSC. */
	DROPPED("\033P1\a\n2\033\\");
	DROPPED("\033_x\ay\033\\");
	/* A string ends at an ESC that starts another sequence, or a CAN or SUB. */
	FILTERS("a\033]0;t\033[1mb", "a\033[1mb");
	FILTERS("a\033]0;t\030b", "ab");
	FILTERS("a\033Px\032b", "ab");
	/* Unterminated, it takes what follows, as a terminal does. */
	FILTERS("a\033]52;c;cHduZWQ=b", "a");
	/* A character whose UTF-8 holds 0x9c is no ST. */
	DROPPED("\033]0;\342\234\234-\305\234\a");
}

static void queries(void)
{
	DROPPED("\005");    /* ENQ */
	DROPPED("\033[6n"); /* cursor position */
	DROPPED("\033[5n"); /* status */
	DROPPED("\033[n");
	DROPPED("\033[?6n");
	DROPPED("\033[?15n");
	DROPPED("\033[c"); /* DA1 */
	DROPPED("\033[0c");
	DROPPED("\033[>c"); /* DA2 */
	DROPPED("\033[>0c");
	DROPPED("\033[=c");  /* DA3 */
	DROPPED("\033Z");    /* DECID */
	DROPPED("\033[x");   /* DECREQTPARM */
	DROPPED("\033[21t"); /* report the title */
	DROPPED("\033[14t"); /* and the window's size, */
	DROPPED("\033[18t");
	DROPPED("\033[11t");	    /* state */
	DROPPED("\033[8;100;200t"); /* resize, */
	DROPPED("\033[22;0;0t");    /* title stack */
	DROPPED("\033[?2004$p");    /* DECRQM */
	DROPPED("\033[4$p");
	DROPPED("\033[>q"); /* XTVERSION */
	DROPPED("\033[>0q");
	DROPPED("\033[?u"); /* the kitty keyboard protocol */
	DROPPED("\033[>1u");
	DROPPED("\033[=1;1u");
	DROPPED("\033[?1;1;0S");    /* XTSMGRAPHICS */
	DROPPED("\033[1;2;3;4;5T"); /* xterm's highlight mouse tracking */
	DROPPED("\033[>4;2m");	    /* modifyOtherKeys */
	DROPPED("\033[?1;2c");
}

static void others_dropped(void)
{
	DROPPED("\033c");   /* RIS */
	DROPPED("\033[!p"); /* DECSTR */
	DROPPED("\033 G");  /* S8C1T */
	DROPPED("\033%@");  /* leave UTF-8 */
	DROPPED("\033%G");
	DROPPED("\033)0"); /* G1 */
	DROPPED("\033N");  /* SS2 */
	DROPPED("\033\\"); /* a lone ST */
	DROPPED("\016");   /* SO, SI */
	DROPPED("\017");
	DROPPED("\0");
	DROPPED("\177");
	DROPPED("\033[3J");	/* the user's scrollback */
	DROPPED("\033[?3h");	/* DECCOLM */
	DROPPED("\033[?12h");	/* cursor blink */
	DROPPED("\033[?6h");	/* origin mode */
	DROPPED("\033[?1005h"); /* UTF-8 mouse */
	DROPPED("\033[2h");	/* KAM */
	DROPPED("\033[20h");	/* LNM */
	DROPPED("\033[?h");
	DROPPED("\033[1\"q");	 /* DECSCA */
	DROPPED("\033[7 q");	 /* no such cursor shape */
	DROPPED("\033[?25;?1h"); /* malformed */
	DROPPED("\033[1?h");
	DROPPED("\033[1 1H");
	DROPPED("\033[1:2H");	 /* ':' only in SGR */
	DROPPED("\033[123456A"); /* numbers of more than 5 digits */
	DROPPED("\033[?001049h");
	/* A CSI longer than the filter holds, whole. */
	FILTERS("a\033[1;2;3;4;5;6;7;8;9;1;2;3;4;5;6;7;8;9;1;2;3;4;5;6;7;8;9;1;2;3;4;5;6;7;8;9;1;"
		"2;3;4;5;6;7;8;9;1;2;3;4;5;6;7;8;9;1;2;3;4;5;6;7;8;9;1;2;3;4;5;6;7;8;9;1;2;3;4;5;6;"
		"7;8;9;0;1;2;3;4;5;6;7;8;9;0;1mb",
		"ab");
	/* CAN and SUB cancel a sequence; its final byte is then text. */
	FILTERS("a\033[31\030mb", "amb");
	FILTERS("a\033[31\032mb", "amb");
	/* A character that cannot be in a CSI ends it, dropped up to its final byte. */
	FILTERS("a\033[3\303\251;1mb", "ab");
	/* An ESC cancels what came before it. */
	FILTERS("a\033[31\033[1mb", "a\033[1mb");
}

/* The C1 controls as UTF-8 encodes them (U+0080-U+009F), and U+FFFD. */
#define U_DCS	"\302\220"
#define U_SOS	"\302\230"
#define U_DECID "\302\232"
#define U_CSI	"\302\233"
#define U_ST	"\302\234"
#define U_OSC	"\302\235"
#define U_PM	"\302\236"
#define U_APC	"\302\237"
#define U_FFFD	"\357\277\275"

static void c1_forms(void)
{
	/* Encoded in UTF-8, as xterm obeys them. */
	DROPPED(U_CSI "6n");
	DROPPED(U_CSI "c");
	DROPPED(U_OSC "52;c;cHduZWQ=\a");
	DROPPED(U_OSC "0;t" U_ST);
	DROPPED(U_DCS "+q544e" U_ST);
	DROPPED(U_APC "Gx" U_ST);
	DROPPED(U_PM "x" U_ST);
	DROPPED(U_SOS "x" U_ST);
	DROPPED(U_DECID);
	DROPPED("\302\216" U_ST "\302\200"); /* SS2, a lone ST, PAD */
	/* What passes, in the 7-bit form. */
	FILTERS("a" U_CSI "31mb", "a\033[31mb");
	FILTERS("a" U_CSI "1;2Hb", "a\033[1;2Hb");
	FILTERS("a\302\204\302\215\302\205b", "a\033D\033M\033Eb"); /* IND, RI, NEL */
	/* A C1 control ends a string, as ESC does; ST in a string is 0x9c. */
	FILTERS("a" U_OSC "0;t" U_CSI "1mb", "a\033[1mb");
	DROPPED("\033]0;t" U_ST);
	/* Raw, they are bytes of no UTF-8 character, which a terminal reading UTF-8 shows as
	 * U+FFFD (and so does the daemon's emulator): what follows them is text. */
	FILTERS("a\2336nb", "a" U_FFFD "6nb");
	FILTERS("a\23552;c;eA==\ab", "a" U_FFFD "52;c;eA==\ab");
	FILTERS("a\220\230\236\237\234b", "a" U_FFFD U_FFFD U_FFFD U_FFFD U_FFFD "b");
}

static void passes(void)
{
	PASSES("\a\b\t\n\v\f\r");
	PASSES("\033[m");
	PASSES("\033[0;1;4;31;42m");
	PASSES("\033[38;5;196m");
	PASSES("\033[38;2;1;2;3m");
	PASSES("\033[38:2::1:2:3m");
	PASSES("\033[4:3m");
	PASSES("\033[H");
	PASSES("\033[10;20H");
	PASSES("\033[10;20f");
	PASSES("\033[A\033[2B\033[3C\033[4D\033[E\033[F\033[5G\033[7d\033[9`");
	PASSES("\033[J\033[0J\033[1J\033[2J\033[K\033[1K\033[2K");
	PASSES("\033[3@\033[2L\033[2M\033[4P\033[3X\033[2S\033[2T\033[Z\033[3b");
	PASSES("\033[1;24r\033[r");
	PASSES("\033[s\033[u\0337\0338");
	PASSES("\033[g\033[3g\033H");
	PASSES("\033=\033>\033D\033E\033M");
	PASSES("\033(0lqk\033(B");
	PASSES("\033#8");
	PASSES("\033[4h\033[4l");
	PASSES("\033[2 q\033[ q");
	PASSES("\033[?1049h\033[?1049l\033[?47h\033[?1047l");
	PASSES("\033[?25l\033[?25h\033[?1h\033[?1l\033[?7l\033[?7h");
	PASSES("\033[?1000h\033[?1002h\033[?1003h\033[?1006h\033[?1004h");
	PASSES("\033[?2004h\033[?2026h\033[?2026l");
	/* Modes: those not allowed are taken out of a list. */
	FILTERS("a\033[?1;12;1049hb", "a\033[?1;1049hb");
	FILTERS("a\033[?12;25lb", "a\033[?25lb");
	FILTERS("a\033[20;4hb", "a\033[4hb");
	FILTERS("a\033[?01049hb", "a\033[?1049hb");
	/* C0 controls inside a sequence act where they are, before it. */
	FILTERS("a\033[3\n1mb", "a\n\033[31mb");
	FILTERS("a\033(\r0b", "a\r\033(0b");
}

static void utf8(void)
{
	static const char text[] = "h\303\251llo w\303\266rld \342\200\224 \342\234\223 "
				   "\360\237\230\200 \346\227\245\346\234\254 \305\221 "
				   "\342\200\235 " U_FFFD " \364\217\277\277 \302\240";

	FILTERS(text, text);
	/* Invalid bytes become U+FFFD: a stray continuation, an overlong form, a surrogate, past
	 * U+10FFFF, a character cut short (by text, a control, or another character). */
	FILTERS("a\277b", "a" U_FFFD "b");
	FILTERS("a\377\376b", "a" U_FFFD U_FFFD "b");
	FILTERS("a\300\257b", "a" U_FFFD U_FFFD "b");
	FILTERS("a\340\237\277b", "a" U_FFFD U_FFFD U_FFFD "b");
	FILTERS("a\355\240\277b", "a" U_FFFD U_FFFD U_FFFD "b");
	FILTERS("a\364\220\200b", "a" U_FFFD U_FFFD U_FFFD "b");
	FILTERS("a\342\202b", "a" U_FFFD "b");
	FILTERS("a\342\202\n", "a" U_FFFD "\n");
	FILTERS("a\342\303\251", "a" U_FFFD "\303\251");
	/* A terminal that does not read UTF-8 gets '?' for every character beyond ASCII. */
	FILTERS_ASCII("h\303\251 \342\200\23552 \360\237\230\200\377", "h? ?52 ??");
	FILTERS_ASCII("\033[1mx\033]0;t\a", "\033[1mx");
}

/* What vim writes to start, draw and end (its xterm termcap, with its queries), and less. */
static void full_screen(void)
{
	FILTERS("\033[?1049h\033[22;0;0t\033[>4;2m\033[?1h\033=\033[?2004h\033[1;24r\033[?12h"
		"\033[?12l\033[22;2t\033[22;1t\033[27m\033[23m\033[29m\033[m\033[H\033[2J"
		"\033[?25l\033[2;1H\033[94m~                   \033[3;1H~\033[m\033[24;1H\"f\" "
		"[New]\033[1;1H\033[?25h\033[>c\033[6n\033]10;?\a\033]11;?\a\033[?u\033[c",
		"\033[?1049h\033[?1h\033=\033[?2004h\033[1;24r\033[27m\033[23m\033[29m\033[m"
		"\033[H\033[2J\033[?25l\033[2;1H\033[94m~                   \033[3;1H~\033[m"
		"\033[24;1H\"f\" [New]\033[1;1H\033[?25h");
	FILTERS("\033[?2004l\033[>4;m\033[23;2t\033[23;1t\033[?1l\033>\033[?1049l\033[23;0;0t",
		"\033[?2004l\033[?1l\033>\033[?1049l");
	FILTERS("\033[?1049h\033[22;0;0t\033[?1h\033=\r\033[7mfile (END)\033[27m\033[K",
		"\033[?1049h\033[?1h\033=\r\033[7mfile (END)\033[27m\033[K");
}

int main(void)
{
	strings();
	queries();
	others_dropped();
	c1_forms();
	passes();
	utf8();
	full_screen();
	return check_done();
}
