/* Loading the ini file: inih with a line reader of our own (long lines, NUL bytes and
 * indented lines made errors or plain lines), each key through config_set. */
#include "config.h"

#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <string.h>

struct load_ctx {
	struct config *cfg;
	char *err;
	size_t errlen;
	int rc;
};

static int load_handler(void *user, const char *section, const char *key, const char *value)
{
	struct load_ctx *ctx = user;

	if (ctx->rc)
		return 0;
	ctx->rc = config_set(ctx->cfg, section, key, value, ctx->err, ctx->errlen);
	return ctx->rc == 0;
}

/* inih reads a line in pieces of its buffer's size and takes what does not fit for a line of
 * its own, where a long value's tail could set a key of its choosing; and it reads a line only
 * up to a NUL byte, so text after one would be skipped. So a line longer than the buffer, or
 * with a NUL byte, ends the parse (as an end of file would), and the load fails. */
struct line_reader {
	FILE *f;
	int line;
	int bad;	 /* the first such line, 0: none */
	const char *why; /* what is wrong with it */
	char why_buf[48];
};

/* inih reads an indented line as more of the previous key's value, and hands it over as that
 * key set again: "a = 1" then "  2" would set a to 2, and a value could grow past what fits on
 * a line. Here an indented line is a line like any other. */
static char *skip_indent(char *str, int n)
{
	int k = 0;

	while (k < n && (str[k] == ' ' || str[k] == '\t' || str[k] == '\v' || str[k] == '\f' ||
			 str[k] == '\r'))
		k++;
	memmove(str, str + k, (size_t)(n - k) + 1);
	return str;
}

static char *read_line(char *str, int num, void *stream)
{
	struct line_reader *r = stream;
	int c = EOF, n = 0;

	if (r->bad)
		return NULL;
	while (n < num - 1 && (c = getc(r->f)) != EOF) {
		if (c == '\0') {
			r->bad = r->line + 1;
			r->why = "has a NUL byte";
			return NULL;
		}
		str[n++] = (char)c;
		if (c == '\n')
			break;
	}
	if (n == 0)
		return NULL;
	str[n] = '\0';
	r->line++;
	/* A full buffer without its newline is too long, at the end of the file as anywhere. */
	if (n == num - 1 && str[n - 1] != '\n') {
		r->bad = r->line;
		snprintf(r->why_buf, sizeof(r->why_buf), "longer than %d bytes", num - 2);
		r->why = r->why_buf;
		return NULL;
	}
	return skip_indent(str, n);
}

int config_load(struct config *cfg, const char *path, char *err, size_t errlen)
{
	struct load_ctx ctx = {cfg, err, errlen, 0};
	struct line_reader r = {.f = fopen(path, "r")};
	char reason[256] = "";
	int line;

	if (!r.f) {
		int e = errno ? errno : ENOENT;

		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(e));
		return -e;
	}
	ctx.err = reason;
	ctx.errlen = sizeof(reason);
	line = ini_parse_stream(read_line, &r, load_handler, &ctx);
	fclose(r.f);
	if (line == 0 && r.bad) {
		snprintf(err, errlen, "%s:%d: %s", path, r.bad, r.why);
		return -EINVAL;
	}
	if (line != 0) {
		snprintf(err, errlen, "%s:%d: %s", path, line, reason[0] ? reason : "syntax error");
		return -EINVAL;
	}
	return 0;
}
