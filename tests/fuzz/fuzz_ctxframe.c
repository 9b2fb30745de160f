/* Fuzz target: a context driver's event frames (src/context/context_frame.c), which the daemon
 * reads from a process a cell can take over. Properties: a body parses or is refused with -EPROTO
 * and leaves nothing allocated; a parsed event is one of the four, an error has its three texts,
 * every text is UTF-8 with its length; a body the parser takes is RFC 8259 JSON by a checker
 * written apart from it (below); and a JSON value it keeps is such JSON too, compact, and the
 * same text once parsed again. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>

#include "context_frame.h"
#include "fuzz.h"
#include "json.h"

/* The oracle: RFC 8259's grammar rule by rule, with text that must be UTF-8 (section 8.1). It
 * shares no code with the parser, so that a rule both got wrong the same way is unlikely. */
struct cursor {
	const unsigned char *p, *end;
	size_t spaces; /* whitespace bytes skipped outside strings */
	int depth;
};

static bool at(const struct cursor *c, unsigned char ch)
{
	return c->p < c->end && *c->p == ch;
}

static bool take(struct cursor *c, unsigned char ch)
{
	if (!at(c, ch))
		return false;
	c->p++;
	return true;
}

static void skip_ws(struct cursor *c)
{
	while (at(c, ' ') || at(c, '\t') || at(c, '\n') || at(c, '\r')) {
		c->p++;
		c->spaces++;
	}
}

/* 1*DIGIT (at_least 1) or *DIGIT (0). */
static bool digit_run(struct cursor *c, size_t at_least)
{
	size_t n = 0;

	for (; c->p < c->end && isdigit(*c->p); c->p++)
		n++;
	return n >= at_least;
}

/* number = [ minus ] int [ frac ] [ exp ] */
static bool oracle_number(struct cursor *c)
{
	take(c, '-');
	if (!take(c, '0')) {
		if (c->p >= c->end || *c->p < '1' || *c->p > '9')
			return false;
		digit_run(c, 1);
	}
	if (take(c, '.') && !digit_run(c, 1))
		return false;
	if (take(c, 'e') || take(c, 'E')) {
		if (!take(c, '+'))
			take(c, '-');
		if (!digit_run(c, 1))
			return false;
	}
	return true;
}

static bool oracle_string(struct cursor *c)
{
	const unsigned char *start;

	if (!take(c, '"'))
		return false;
	start = c->p;
	while (!at(c, '"')) {
		if (c->p >= c->end || *c->p < 0x20)
			return false;
		if (take(c, '\\')) {
			if (take(c, 'u')) {
				for (int k = 0; k < 4; k++)
					if (c->p >= c->end || !isxdigit(*c->p++))
						return false;
				continue;
			}
			if (c->p >= c->end || !memchr("\"\\/bfnrt", *c->p, 8))
				return false;
		}
		c->p++;
	}
	if (utf8_prefix((const char *)start, (size_t)(c->p - start), NULL) !=
	    (size_t)(c->p - start))
		return false;
	c->p++;
	return true;
}

static bool oracle_value(struct cursor *c);

/* begin-object [ member *( value-separator member ) ] end-object, or the array's alike. */
static bool oracle_container(struct cursor *c, bool object)
{
	unsigned char close = object ? '}' : ']';

	c->p++;
	skip_ws(c);
	if (take(c, close))
		return true;
	do {
		skip_ws(c);
		if (object && !oracle_string(c))
			return false;
		skip_ws(c);
		if (object && !take(c, ':'))
			return false;
		if (!oracle_value(c))
			return false;
	} while (take(c, ','));
	return take(c, close);
}

/* ws value ws */
static bool oracle_value(struct cursor *c)
{
	static const char *const words[] = {"true", "false", "null"};
	bool ok = false;

	skip_ws(c);
	if (c->p >= c->end || ++c->depth > 1000)
		return false;
	if (*c->p == '{' || *c->p == '[') {
		ok = oracle_container(c, *c->p == '{');
	} else if (*c->p == '"') {
		ok = oracle_string(c);
	} else if (*c->p == '-' || isdigit(*c->p)) {
		ok = oracle_number(c);
	} else {
		for (int i = 0; i < 3 && !ok; i++) {
			size_t len = strlen(words[i]);

			if ((size_t)(c->end - c->p) >= len && !memcmp(c->p, words[i], len)) {
				c->p += len;
				ok = true;
			}
		}
	}
	c->depth--;
	skip_ws(c);
	return ok;
}

/* Whether s is one JSON text; *spaces counts its whitespace outside strings. */
static bool is_json(const char *s, size_t len, size_t *spaces)
{
	struct cursor c = {(const unsigned char *)s, (const unsigned char *)s + len, 0, 0};
	bool ok = oracle_value(&c) && c.p == c.end;

	*spaces = c.spaces;
	return ok;
}

static void check_json_value(const char *v, size_t len)
{
	struct jbuf b = {0};
	struct ctx_event again;
	size_t spaces;

	FUZZ_ASSERT(is_json(v, len, &spaces) && spaces == 0);
	jbuf_add(&b, "{\"ev\":\"result\",\"data\":{\"application/json\":", 42);
	jbuf_add(&b, v, len);
	jbuf_add(&b, "}}", 2);
	FUZZ_ASSERT(ctx_event_parse(b.p, b.len, &again) == 0);
	FUZZ_ASSERT(again.datalen[7] == len && fuzz_same(again.data[7], len, v, len));
	ctx_event_free(&again);
	free(b.p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctx_event ev;
	int rc = ctx_event_parse((const char *)data, size, &ev);
	size_t spaces;

	FUZZ_ASSERT(rc == 0 || rc == -EPROTO);
	if (rc < 0)
		return 0;
	FUZZ_ASSERT(is_json((const char *)data, size, &spaces));
	FUZZ_ASSERT(ev.ev <= EV_DONE);
	if (ev.ev == EV_ERROR)
		FUZZ_ASSERT(ev.name && ev.value && ev.traceback);
	for (unsigned i = 0; i < CTX_FORMATS; i++) {
		if (!ev.data[i])
			continue;
		FUZZ_ASSERT(utf8_prefix(ev.data[i], ev.datalen[i], NULL) == ev.datalen[i]);
		FUZZ_ASSERT(ev.data[i][ev.datalen[i]] == '\0');
		if (i == 7)
			check_json_value(ev.data[i], ev.datalen[i]);
	}
	ctx_event_free(&ev);
	return 0;
}
