/* The parser of rx (see rx.h): a pattern into a tree (rx_priv.h), by recursive descent over
 * the grammar of POSIX extended expressions, taking what glibc's regcomp takes in the C locale
 * and refusing what it refuses, so that a pattern written for it keeps its meaning. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rx.h"
#include "rx_priv.h"
#include "xmalloc.h"

#define NONE UINT16_MAX

struct parser {
	const unsigned char *p, *end;
	struct rx_node *nodes;
	size_t nnodes;
	rx_byteset *sets;
	size_t nsets;
	unsigned depth; /* open parentheses */
	bool bad;
};

static void set_add(uint8_t *s, unsigned c)
{
	s[c >> 3] |= (uint8_t)(1u << (c & 7));
}

/* Both tables have room for what a pattern of its length can make (see rx_compile). */
static uint16_t new_node(struct parser *ps, enum rx_node_kind kind)
{
	struct rx_node *n = &ps->nodes[ps->nnodes];

	memset(n, 0, sizeof(*n));
	n->kind = (uint8_t)kind;
	return (uint16_t)ps->nnodes++;
}

static uint16_t new_set(struct parser *ps, uint8_t **set)
{
	uint16_t node = new_node(ps, N_SET);

	*set = ps->sets[ps->nsets];
	memset(*set, 0, sizeof(rx_byteset));
	ps->nodes[node].set = (uint16_t)ps->nsets++;
	return node;
}

static uint16_t pair(struct parser *ps, enum rx_node_kind kind, uint16_t a, uint16_t b)
{
	uint16_t n = new_node(ps, kind);

	ps->nodes[n].a = a;
	ps->nodes[n].b = b;
	return n;
}

bool rx_is_word(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

/* The C locale's class of that name into s; false for an unknown name. */
static bool add_class(uint8_t *s, const char *name, size_t len)
{
	static const char *const names[] = {"alnum", "alpha", "blank", "cntrl", "digit", "graph",
					    "lower", "print", "punct", "space", "upper", "xdigit"};
	size_t k;

	for (k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (strlen(names[k]) == len && !memcmp(names[k], name, len))
			break;
	if (k == sizeof(names) / sizeof(names[0]))
		return false;
	for (unsigned c = 0; c < 128; c++) {
		bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
		bool digit = c >= '0' && c <= '9';
		bool graph = c > 0x20 && c < 0x7f;
		bool in[] = {alpha || digit,
			     alpha,
			     c == ' ' || c == '\t',
			     c < 0x20 || c == 0x7f,
			     digit,
			     graph,
			     c >= 'a' && c <= 'z',
			     graph || c == ' ',
			     graph && !alpha && !digit,
			     c == ' ' || (c >= '\t' && c <= '\r'),
			     c >= 'A' && c <= 'Z',
			     digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')};

		if (in[k])
			set_add(s, c);
	}
	return true;
}

/* After "[=" or "[.": the one byte up to "=]" or ".]" (multi-byte collating elements are
 * refused, as glibc does in the C locale); -1 if malformed. */
static int bracket_elem(struct parser *ps, char close)
{
	int c;

	if (ps->end - ps->p < 3 || ps->p[1] != close || ps->p[2] != ']')
		return -1;
	c = ps->p[0];
	ps->p += 3;
	return c;
}

/* After '[': one bracket expression into a new set, up to its ']'. */
static uint16_t parse_bracket(struct parser *ps)
{
	bool negate = false, first = true;
	uint8_t *s;
	uint16_t node = new_set(ps, &s);

	if (ps->p < ps->end && *ps->p == '^') {
		negate = true;
		ps->p++;
	}
	for (;;) {
		int lo, hi;

		if (ps->p >= ps->end) {
			ps->bad = true;
			return node;
		}
		if (*ps->p == ']' && !first) {
			ps->p++;
			break;
		}
		first = false;
		if (*ps->p == '[' && ps->p + 1 < ps->end && ps->p[1] == ':') {
			const unsigned char *name = ps->p + 2, *q = name;

			while (q + 1 < ps->end && !(q[0] == ':' && q[1] == ']'))
				q++;
			if (q + 1 >= ps->end ||
			    !add_class(s, (const char *)name, (size_t)(q - name))) {
				ps->bad = true;
				return node;
			}
			ps->p = q + 2;
			/* a class cannot start a range */
			if (ps->p + 1 < ps->end && ps->p[0] == '-' && ps->p[1] != ']') {
				ps->bad = true;
				return node;
			}
			continue;
		}
		if (*ps->p == '[' && ps->p + 1 < ps->end && (ps->p[1] == '=' || ps->p[1] == '.')) {
			char close = (char)ps->p[1];

			ps->p += 2;
			lo = bracket_elem(ps, close);
		} else {
			lo = *ps->p++;
		}
		if (lo < 0) {
			ps->bad = true;
			return node;
		}
		hi = lo;
		if (ps->p + 1 < ps->end && ps->p[0] == '-' && ps->p[1] != ']') {
			ps->p++;
			if (ps->p[0] == '[' && ps->p + 1 < ps->end && ps->p[1] == '.') {
				ps->p += 2;
				hi = bracket_elem(ps, '.');
			} else {
				hi = *ps->p++;
			}
			/* "a-c-e": a range cannot start where one ended */
			if (hi < lo ||
			    (ps->p + 1 < ps->end && ps->p[0] == '-' && ps->p[1] != ']')) {
				ps->bad = true;
				return node;
			}
		}
		for (int c = lo; c <= hi; c++)
			set_add(s, (unsigned)c);
	}
	if (negate) {
		for (size_t i = 0; i < sizeof(rx_byteset); i++)
			s[i] = (uint8_t)~s[i];
	}
	return node;
}

static uint16_t assertion(struct parser *ps, enum rx_assert_kind kind)
{
	uint16_t n = new_node(ps, N_ASSERT);

	ps->nodes[n].assert = (uint8_t)kind;
	return n;
}

/* \w \W \s \S as sets. */
static uint16_t class_escape(struct parser *ps, unsigned char c)
{
	uint8_t *s;
	uint16_t node = new_set(ps, &s);

	for (unsigned b = 0; b < 256; b++) {
		bool in = (c == 'w' || c == 'W') ? rx_is_word((int)b)
						 : b == ' ' || (b >= '\t' && b <= '\r');

		if (in == (c == 'w' || c == 's'))
			set_add(s, b);
	}
	return node;
}

static uint16_t literal(struct parser *ps, unsigned char c)
{
	uint8_t *s;
	uint16_t node = new_set(ps, &s);

	set_add(s, c);
	return node;
}

static uint16_t parse_alt(struct parser *ps);

static uint16_t parse_escape(struct parser *ps)
{
	unsigned char c;

	if (ps->p >= ps->end) {
		ps->bad = true;
		return NONE;
	}
	c = *ps->p++;
	switch (c) {
	case 'w':
	case 'W':
	case 's':
	case 'S':
		return class_escape(ps, c);
	case 'b':
		return assertion(ps, A_WORDB);
	case 'B':
		return assertion(ps, A_NWORDB);
	case '<':
		return assertion(ps, A_WSTART);
	case '>':
		return assertion(ps, A_WEND);
	case '`':
		return assertion(ps, A_BOL);
	case '\'':
		return assertion(ps, A_EOL);
	default:
		break;
	}
	if (c >= '1' && c <= '9') { /* a back-reference: what makes matching exponential */
		ps->bad = true;
		return NONE;
	}
	return literal(ps, c);
}

static uint16_t parse_atom(struct parser *ps)
{
	unsigned char c = *ps->p++;
	uint8_t *s;
	uint16_t node;

	switch (c) {
	case '(':
		ps->depth++;
		node = ps->p < ps->end && *ps->p == ')' ? new_node(ps, N_EMPTY) : parse_alt(ps);
		if (ps->p >= ps->end || *ps->p != ')') {
			ps->bad = true;
			return NONE;
		}
		ps->p++;
		ps->depth--;
		return node;
	case '*':
	case '+':
	case '?':
	case '{': /* a repetition of nothing */
		ps->bad = true;
		return NONE;
	case '[':
		return parse_bracket(ps);
	case '.':
		node = new_set(ps, &s);
		for (unsigned b = 0; b < 256; b++)
			if (b != '\n')
				set_add(s, b);
		return node;
	case '^':
		return assertion(ps, A_BOL);
	case '$':
		return assertion(ps, A_EOL);
	case '\\':
		return parse_escape(ps);
	default: /* ')' without its '(' is itself, as for glibc */
		return literal(ps, c);
	}
}

static unsigned parse_count(struct parser *ps, bool *given)
{
	unsigned v = 0;

	*given = false;
	while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
		v = v * 10 + (unsigned)(*ps->p++ - '0');
		*given = true;
		if (v > RX_DUP_MAX) {
			ps->bad = true;
			return 0;
		}
	}
	return v;
}

/* After '{': "m}", "m,}", "m,n}" or ",n}" (m = 0), into *min and *max. */
static void parse_interval(struct parser *ps, uint16_t *min, uint16_t *max)
{
	bool has_min, has_max;
	unsigned lo = parse_count(ps, &has_min), hi = lo;
	bool comma = ps->p < ps->end && *ps->p == ',';

	if (comma) {
		ps->p++;
		hi = parse_count(ps, &has_max);
		if (!has_max)
			hi = RX_REP_INF;
	}
	if (ps->bad || (!has_min && !comma) || ps->p >= ps->end || *ps->p != '}' || hi < lo) {
		ps->bad = true;
		return;
	}
	ps->p++;
	*min = (uint16_t)lo;
	*max = (uint16_t)hi;
}

static uint16_t parse_repeat(struct parser *ps)
{
	uint16_t atom = parse_atom(ps);

	while (!ps->bad && ps->p < ps->end && strchr("*+?{", *ps->p)) {
		uint16_t min = 0, max = RX_REP_INF, n;
		unsigned char q = *ps->p++;

		/* glibc refuses to repeat an anchor or a word boundary */
		if (ps->nodes[atom].kind == N_ASSERT) {
			ps->bad = true;
			break;
		}
		if (q == '+')
			min = 1;
		else if (q == '?')
			max = 1;
		else if (q == '{')
			parse_interval(ps, &min, &max);
		n = new_node(ps, N_REPEAT);
		ps->nodes[n].a = atom;
		ps->nodes[n].min = min;
		ps->nodes[n].max = max;
		atom = n;
	}
	return ps->bad ? NONE : atom;
}

/* A branch: repetitions up to '|', the end, or the ')' of an open group. */
static uint16_t parse_concat(struct parser *ps)
{
	uint16_t node = NONE;

	while (!ps->bad && ps->p < ps->end && *ps->p != '|' && !(*ps->p == ')' && ps->depth)) {
		uint16_t next = parse_repeat(ps);

		if (ps->bad)
			return NONE;
		node = node == NONE ? next : pair(ps, N_CAT, node, next);
	}
	/* an empty branch ("a|", "(|a)") matches the empty string, as for glibc */
	return node == NONE ? new_node(ps, N_EMPTY) : node;
}

static uint16_t parse_alt(struct parser *ps)
{
	uint16_t node = parse_concat(ps);

	while (!ps->bad && ps->p < ps->end && *ps->p == '|') {
		ps->p++;
		node = pair(ps, N_ALT, node, parse_concat(ps));
	}
	return node;
}

int rx_parse(const char *pattern, size_t len, struct rx_tree *t)
{
	/* every byte makes at most a set and two nodes around it (a repetition, a join) */
	struct parser ps = {.p = (const unsigned char *)pattern,
			    .end = (const unsigned char *)pattern + len};

	ps.nodes = xcalloc(3 * len + 2, sizeof(*ps.nodes));
	ps.sets = xcalloc(len + 1, sizeof(rx_byteset));
	/* at the top level, ')' is a literal and parse_alt only stops at the end */
	t->root = parse_alt(&ps);
	t->nodes = ps.nodes;
	t->nnodes = ps.nnodes;
	t->sets = ps.sets;
	t->nsets = ps.nsets;
	if (!ps.bad)
		return 0;
	free(ps.nodes);
	free(ps.sets);
	return -EINVAL;
}
