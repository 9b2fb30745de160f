/* The driver's frames (see context_frame.h): reading them off the pipe with their bounds, and a
 * strict JSON parser for the few shapes an event may have. It is written here rather than taken
 * from json-c or jansson because it needs no tree of a 32 MiB frame, bounds nesting itself, and
 * keeps a number of any size exactly, where those libraries convert numbers to machine integers
 * and doubles (jansson refuses an integer past 64 bits). It takes exactly RFC 8259's grammar
 * with UTF-8 text and no lone surrogate, and tests/fuzz/fuzz_ctxframe.c holds it to that. */
#include "context_frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "utf8.h"
#include "xmalloc.h"

/* Nesting a displayed JSON value may have: deeper is refused, so parsing never recurses far. */
#define DEPTH_MAX 64

static const struct {
	const char *mime, *ext, *field;
	bool binary;
} formats[CTX_FORMATS] = {
    {"text/plain", "txt", "text", false},
    {"text/html", "html", "html", false},
    {"text/markdown", "md", "markdown", false},
    {"text/latex", "latex", "latex", false},
    {"image/png", "png", "png", true},
    {"image/jpeg", "jpeg", "jpeg", true},
    {"image/svg+xml", "svg", "svg", false},
    {"application/json", "json", "json", false},
    {"application/javascript", "js", "javascript", false},
};

const char *ctx_format_ext(unsigned i)
{
	return formats[i].ext;
}

const char *ctx_format_field(unsigned i)
{
	return formats[i].field;
}

bool ctx_format_binary(unsigned i)
{
	return formats[i].binary;
}

struct parser {
	const char *s;
	size_t i, n;
};

static void ws(struct parser *p)
{
	while (p->i < p->n && strchr(" \t\r\n", p->s[p->i]) && p->s[p->i])
		p->i++;
}

static bool eat(struct parser *p, char c)
{
	ws(p);
	if (p->i < p->n && p->s[p->i] == c) {
		p->i++;
		return true;
	}
	return false;
}

static int hex4(struct parser *p, unsigned *v)
{
	*v = 0;
	if (p->n - p->i < 4)
		return -1;
	for (int k = 0; k < 4; k++) {
		char c = p->s[p->i++];

		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			*v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			*v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	return 0;
}

static void put_utf8(struct jbuf *b, unsigned cp)
{
	char u[4];
	size_t n = utf8_put(u, cp);

	if (b)
		jbuf_add(b, u, n);
}

/* \uXXXX, with a surrogate pair as one character; a lone surrogate is refused. */
static int unicode_escape(struct parser *p, struct jbuf *b)
{
	unsigned cp, lo;

	if (hex4(p, &cp) < 0 || (cp >= 0xdc00 && cp < 0xe000))
		return -1;
	if (cp >= 0xd800 && cp < 0xdc00) {
		if (p->n - p->i < 2 || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u')
			return -1;
		p->i += 2;
		if (hex4(p, &lo) < 0 || lo < 0xdc00 || lo >= 0xe000)
			return -1;
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	put_utf8(b, cp);
	return 0;
}

/* A string, decoded into b (NULL: only checked). Raw bytes must be UTF-8. */
static int string(struct parser *p, struct jbuf *b)
{
	static const char esc_in[] = "\"\\/bfnrt", esc_out[] = "\"\\/\b\f\n\r\t";

	if (!eat(p, '"'))
		return -1;
	while (p->i < p->n) {
		size_t start = p->i, ok;
		const char *e;

		while (p->i < p->n && p->s[p->i] != '"' && p->s[p->i] != '\\' &&
		       (unsigned char)p->s[p->i] >= 0x20)
			p->i++;
		ok = utf8_prefix(p->s + start, p->i - start, NULL);
		if (ok != p->i - start)
			return -1;
		if (b)
			jbuf_add(b, p->s + start, ok);
		if (p->i >= p->n || (unsigned char)p->s[p->i] < 0x20)
			return -1;
		if (p->s[p->i++] == '"')
			return 0;
		if (p->i >= p->n)
			return -1;
		if (p->s[p->i] == 'u') {
			p->i++;
			if (unicode_escape(p, b) < 0)
				return -1;
			continue;
		}
		e = strchr(esc_in, p->s[p->i]);
		if (!e || !*e)
			return -1;
		p->i++;
		if (b)
			jbuf_add(b, &esc_out[e - esc_in], 1);
	}
	return -1;
}

static bool digit(const struct parser *p)
{
	return p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9';
}

static void digits(struct parser *p)
{
	while (digit(p))
		p->i++;
}

/* RFC 8259's number, -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, and nothing looser: no
 * leading zero, no lone sign, no "1." or ".5", one exponent sign. Its text is kept as it is: any
 * magnitude and precision is a valid number, and the reader decides what it makes of 1e999. */
static int number(struct parser *p, struct jbuf *out)
{
	size_t start = p->i;

	if (p->i < p->n && p->s[p->i] == '-')
		p->i++;
	if (!digit(p))
		return -1;
	if (p->s[p->i++] != '0')
		digits(p);
	if (p->i < p->n && p->s[p->i] == '.') {
		p->i++;
		if (!digit(p))
			return -1;
		digits(p);
	}
	if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
		p->i++;
		if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-'))
			p->i++;
		if (!digit(p))
			return -1;
		digits(p);
	}
	if (out)
		jbuf_add(out, p->s + start, p->i - start);
	return 0;
}

static int literal(struct parser *p, const char *word, struct jbuf *out)
{
	size_t len = strlen(word);

	if (p->n - p->i < len || memcmp(p->s + p->i, word, len))
		return -1;
	p->i += len;
	if (out)
		jbuf_add(out, word, len);
	return 0;
}

/* A string inside a value: decoded, then written again with the writer's escapes. */
static int string_value(struct parser *p, struct jbuf *out)
{
	struct jbuf b = {0};
	int rc = string(p, out ? &b : NULL);

	if (rc == 0 && out)
		json_string(out, b.p ? b.p : "", b.len);
	free(b.p);
	return rc;
}

static int value(struct parser *p, int depth, struct jbuf *out);

/* The members of an object or the elements of an array, after its opening bracket. */
static int members(struct parser *p, char open, int depth, struct jbuf *out)
{
	char close = open == '{' ? '}' : ']';

	if (eat(p, close))
		return 0;
	do {
		if (open == '{' && (string_value(p, out) < 0 || !eat(p, ':')))
			return -1;
		if (open == '{' && out)
			jbuf_add(out, ":", 1);
		if (value(p, depth + 1, out) < 0)
			return -1;
		if (!eat(p, ','))
			return eat(p, close) ? 0 : -1;
		if (out)
			jbuf_add(out, ",", 1);
	} while (true);
}

/* Any value, checked and, unless out is NULL, written into out again from what was parsed
 * (compact, strings escaped by the writer), so that what is kept of it is never the sender's
 * text. depth bounds nesting. */
static int value(struct parser *p, int depth, struct jbuf *out)
{
	char c;

	ws(p);
	if (p->i >= p->n || depth > DEPTH_MAX)
		return -1;
	c = p->s[p->i];
	if (c == '"')
		return string_value(p, out);
	if (c == '{' || c == '[') {
		p->i++;
		if (out)
			jbuf_add(out, &c, 1);
		if (members(p, c, depth, out) < 0)
			return -1;
		if (out)
			jbuf_add(out, c == '{' ? "}" : "]", 1);
		return 0;
	}
	if (c == 't')
		return literal(p, "true", out);
	if (c == 'f')
		return literal(p, "false", out);
	if (c == 'n')
		return literal(p, "null", out);
	return number(p, out);
}

static int take_string(struct parser *p, char **out, size_t *len)
{
	struct jbuf b = {0};

	if (string(p, &b) < 0) {
		free(b.p);
		return -1;
	}
	jbuf_add(&b, "", 1);
	free(*out); /* a key given twice: the last one counts */
	*out = b.p;
	if (len)
		*len = b.len - 1;
	return 0;
}

static int format_index(const char *mime)
{
	for (int i = 0; i < CTX_FORMATS; i++)
		if (!strcmp(mime, formats[i].mime))
			return i;
	return -1;
}

/* "data": {MIME: VALUE}; application/json's value is kept as JSON text, written again. */
static int data_object(struct parser *p, struct ctx_event *ev)
{
	if (!eat(p, '{'))
		return -1;
	if (eat(p, '}'))
		return 0;
	do {
		char *mime = NULL;
		int i, rc;

		if (take_string(p, &mime, NULL) < 0 || !eat(p, ':')) {
			free(mime);
			return -1;
		}
		i = format_index(mime);
		free(mime);
		ws(p);
		if (i == 7) {
			struct jbuf v = {0};

			if (value(p, 1, &v) < 0) {
				free(v.p);
				return -1;
			}
			free(ev->data[i]);
			ev->data[i] = v.p;
			ev->datalen[i] = v.len;
			continue;
		}
		rc = i < 0 ? value(p, 1, NULL) : take_string(p, &ev->data[i], &ev->datalen[i]);
		if (rc < 0)
			return -1;
	} while (eat(p, ','));
	return eat(p, '}') ? 0 : -1;
}

static int ev_kind(const char *name, enum ctx_ev *ev)
{
	static const char *const names[] = {"ready", "result", "error", "done"};

	for (int i = 0; i < 4; i++)
		if (!strcmp(name, names[i])) {
			*ev = (enum ctx_ev)i;
			return 0;
		}
	return -1;
}

static int member(struct parser *p, struct ctx_event *ev, bool *have_ev)
{
	char *key = NULL, *kind = NULL;
	int rc = -1;

	if (take_string(p, &key, NULL) < 0 || !eat(p, ':'))
		goto out;
	ws(p);
	if (!strcmp(key, "ev")) {
		rc = take_string(p, &kind, NULL) < 0 || ev_kind(kind, &ev->ev) < 0 ? -1 : 0;
		*have_ev = rc == 0;
	} else if (!strcmp(key, "main")) {
		ev->main = literal(p, "true", NULL) == 0;
		rc = ev->main || literal(p, "false", NULL) == 0 ? 0 : -1;
	} else if (!strcmp(key, "data")) {
		rc = data_object(p, ev);
	} else if (!strcmp(key, "name")) {
		rc = take_string(p, &ev->name, NULL);
	} else if (!strcmp(key, "value")) {
		rc = take_string(p, &ev->value, NULL);
	} else if (!strcmp(key, "traceback")) {
		rc = take_string(p, &ev->traceback, NULL);
	} else {
		rc = value(p, 1, NULL);
	}
out:
	free(key);
	free(kind);
	return rc;
}

int ctx_event_parse(const char *body, size_t len, struct ctx_event *ev)
{
	struct parser p = {body, 0, len};
	bool have_ev = false;

	memset(ev, 0, sizeof(*ev));
	if (!eat(&p, '{'))
		goto bad;
	if (!eat(&p, '}')) {
		do {
			if (member(&p, ev, &have_ev) < 0)
				goto bad;
		} while (eat(&p, ','));
		if (!eat(&p, '}'))
			goto bad;
	}
	ws(&p);
	if (p.i != p.n || !have_ev)
		goto bad;
	if (ev->ev == EV_ERROR && (!ev->name || !ev->value || !ev->traceback))
		goto bad;
	return 0;
bad:
	ctx_event_free(ev);
	return -EPROTO;
}

void ctx_event_free(struct ctx_event *ev)
{
	for (int i = 0; i < CTX_FORMATS; i++)
		free(ev->data[i]);
	free(ev->name);
	free(ev->value);
	free(ev->traceback);
	memset(ev, 0, sizeof(*ev));
}

/* Reads into dst up to want bytes; 1 when all are in, 0 for an empty pipe, or -errno. */
static int fill(int fd, void *dst, size_t want, size_t *got)
{
	while (*got < want) {
		ssize_t n = read(fd, (char *)dst + *got, want - *got);

		if (n == 0)
			return -EPIPE;
		if (n < 0)
			return errno == EAGAIN ? 0 : errno == EINTR ? 0 : -errno;
		*got += (size_t)n;
	}
	return 1;
}

int ctx_reader_step(struct ctx_reader *r, int fd, struct ctx_event *ev)
{
	int rc;

	if (!r->body) {
		if ((rc = fill(fd, r->head, 4, &r->got)) <= 0)
			return rc;
		r->len = (uint32_t)r->head[0] << 24 | (uint32_t)r->head[1] << 16 |
			 (uint32_t)r->head[2] << 8 | r->head[3];
		if (r->len > CTX_FRAME_MAX)
			return -EMSGSIZE;
		r->body = xmalloc(r->len + 1);
		r->got = 0;
	}
	if ((rc = fill(fd, r->body, r->len, &r->got)) <= 0)
		return rc;
	rc = ctx_event_parse(r->body, r->len, ev);
	free(r->body);
	r->body = NULL;
	r->got = 0;
	return rc < 0 ? rc : 1;
}

void ctx_reader_free(struct ctx_reader *r)
{
	free(r->body);
	memset(r, 0, sizeof(*r));
}
