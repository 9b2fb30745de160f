/* Linear-time regular expressions (see rx.h): a recursive-descent parser into a small tree of
 * byte sets, assertions, concatenations, alternations and repetitions; code generation with
 * bounded repetitions expanded; and a Pike VM that keeps one thread per instruction, so each
 * byte of the text costs at most one step per instruction. The syntax follows glibc's regcomp
 * in the C locale where it accepts a pattern, so that patterns written for it keep their
 * meaning. */
#include "rx.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

#define REP_INF UINT16_MAX
#define NONE	UINT16_MAX

enum node_kind { N_EMPTY, N_SET, N_ASSERT, N_CAT, N_ALT, N_REPEAT };
enum assert_kind { A_BOL, A_EOL, A_WORDB, A_NWORDB, A_WSTART, A_WEND };
enum op { OP_SET, OP_ASSERT, OP_SPLIT, OP_JMP, OP_MATCH };

typedef uint8_t byteset[32];

struct node {
	uint8_t kind;
	uint8_t assert;
	uint16_t set;	   /* N_SET */
	uint16_t a, b;	   /* N_CAT and N_ALT: the two sides; N_REPEAT: a, what repeats */
	uint16_t min, max; /* N_REPEAT */
};

struct inst {
	uint8_t op;
	uint8_t arg;   /* OP_ASSERT: its kind */
	uint16_t x, y; /* OP_SET: the set; OP_JMP: x; OP_SPLIT: x and y */
};

struct rx {
	size_t n;
	struct inst *prog;
	byteset *sets;
};

struct parser {
	const unsigned char *p, *end;
	struct node *nodes;
	size_t nnodes;
	byteset *sets;
	size_t nsets;
	unsigned depth; /* open parentheses */
	bool bad;
};

static void set_add(uint8_t *s, unsigned c)
{
	s[c >> 3] |= (uint8_t)(1u << (c & 7));
}

static bool set_has(const uint8_t *s, unsigned c)
{
	return s[c >> 3] & (1u << (c & 7));
}

/* Both tables have room for what a pattern of its length can make (see rx_compile). */
static uint16_t new_node(struct parser *ps, enum node_kind kind)
{
	struct node *n = &ps->nodes[ps->nnodes];

	memset(n, 0, sizeof(*n));
	n->kind = (uint8_t)kind;
	return (uint16_t)ps->nnodes++;
}

static uint16_t new_set(struct parser *ps, uint8_t **set)
{
	uint16_t node = new_node(ps, N_SET);

	*set = ps->sets[ps->nsets];
	memset(*set, 0, sizeof(byteset));
	ps->nodes[node].set = (uint16_t)ps->nsets++;
	return node;
}

static uint16_t pair(struct parser *ps, enum node_kind kind, uint16_t a, uint16_t b)
{
	uint16_t n = new_node(ps, kind);

	ps->nodes[n].a = a;
	ps->nodes[n].b = b;
	return n;
}

static bool is_word(int c)
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
		for (size_t i = 0; i < sizeof(byteset); i++)
			s[i] = (uint8_t)~s[i];
	}
	return node;
}

static uint16_t assertion(struct parser *ps, enum assert_kind kind)
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
		bool in =
		    (c == 'w' || c == 'W') ? is_word((int)b) : b == ' ' || (b >= '\t' && b <= '\r');

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
			hi = REP_INF;
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
		uint16_t min = 0, max = REP_INF, n;
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

/* Instructions node takes; capped just past RX_PROG_MAX so sums cannot overflow. */
static uint64_t size_of(const struct parser *ps, uint16_t i)
{
	const struct node *n = &ps->nodes[i];
	uint64_t s, x;

	switch (n->kind) {
	case N_EMPTY:
		return 0;
	case N_SET:
	case N_ASSERT:
		return 1;
	case N_CAT:
		s = size_of(ps, n->a) + size_of(ps, n->b);
		break;
	case N_ALT:
		s = size_of(ps, n->a) + size_of(ps, n->b) + 2;
		break;
	default:
		x = size_of(ps, n->a);
		s = n->min * x +
		    (n->max == REP_INF ? x + 2 : (uint64_t)(n->max - n->min) * (x + 1));
		break;
	}
	return s > RX_PROG_MAX ? RX_PROG_MAX + 1 : s;
}

static void put(struct rx *rx, enum op op, unsigned arg, size_t x, size_t y)
{
	rx->prog[rx->n++] = (struct inst){(uint8_t)op, (uint8_t)arg, (uint16_t)x, (uint16_t)y};
}

static void emit(const struct parser *ps, struct rx *rx, uint16_t i)
{
	const struct node *n = &ps->nodes[i];
	size_t at, body;

	switch (n->kind) {
	case N_EMPTY:
		break;
	case N_SET:
		put(rx, OP_SET, 0, n->set, 0);
		break;
	case N_ASSERT:
		put(rx, OP_ASSERT, n->assert, 0, 0);
		break;
	case N_CAT:
		emit(ps, rx, n->a);
		emit(ps, rx, n->b);
		break;
	case N_ALT:
		at = rx->n;
		put(rx, OP_SPLIT, 0, at + 1, 0);
		emit(ps, rx, n->a);
		body = rx->n;
		put(rx, OP_JMP, 0, 0, 0);
		rx->prog[at].y = (uint16_t)rx->n;
		emit(ps, rx, n->b);
		rx->prog[body].x = (uint16_t)rx->n;
		break;
	default:
		for (unsigned k = 0; k < n->min; k++)
			emit(ps, rx, n->a);
		if (n->max == REP_INF) {
			at = rx->n;
			put(rx, OP_SPLIT, 0, at + 1, 0);
			emit(ps, rx, n->a);
			put(rx, OP_JMP, 0, at, 0);
			rx->prog[at].y = (uint16_t)rx->n;
			break;
		}
		/* each optional copy may skip to the end of them all: x?x?x? matches what
		 * x{0,3} does */
		body = rx->n + (size_t)(n->max - n->min) * (size_t)(size_of(ps, n->a) + 1);
		for (unsigned k = n->min; k < n->max; k++) {
			put(rx, OP_SPLIT, 0, rx->n + 1, body);
			emit(ps, rx, n->a);
		}
		break;
	}
}

void rx_free(struct rx *rx)
{
	if (!rx)
		return;
	free(rx->prog);
	free(rx->sets);
	free(rx);
}

int rx_compile(const char *pattern, size_t len, struct rx **out)
{
	/* every byte makes at most a set and two nodes around it (a repetition, a join) */
	struct parser ps = {.p = (const unsigned char *)pattern,
			    .end = (const unsigned char *)pattern + len};
	struct rx *rx;
	uint16_t root;
	uint64_t size;

	*out = NULL;
	if (len > RX_PATTERN_MAX || memchr(pattern, '\0', len))
		return -EINVAL;
	ps.nodes = xcalloc(3 * len + 2, sizeof(*ps.nodes));
	ps.sets = xcalloc(len + 1, sizeof(byteset));
	root = parse_alt(&ps);
	/* at the top level, ')' is a literal and parse_alt only stops at the end */
	size = ps.bad ? 0 : size_of(&ps, root);
	if (ps.bad || size + 1 > RX_PROG_MAX) {
		free(ps.nodes);
		free(ps.sets);
		return -EINVAL;
	}
	rx = xcalloc(1, sizeof(*rx));
	rx->prog = xcalloc((size_t)size + 1, sizeof(*rx->prog));
	emit(&ps, rx, root);
	put(rx, OP_MATCH, 0, 0, 0);
	rx->sets = ps.sets;
	free(ps.nodes);
	*out = rx;
	return 0;
}

struct vm {
	const struct rx *rx;
	const unsigned char *text;
	size_t len;
	uint16_t *stack;
	uint32_t *mark; /* the step an instruction was last added in */
	uint32_t step;
	bool matched;
};

static bool holds(const struct vm *vm, unsigned kind, size_t pos)
{
	bool before = pos > 0 && is_word(vm->text[pos - 1]);
	bool after = pos < vm->len && is_word(vm->text[pos]);

	switch (kind) {
	case A_BOL:
		return pos == 0;
	case A_EOL:
		return pos == vm->len;
	case A_WORDB:
		return before != after;
	case A_NWORDB:
		return before == after;
	case A_WSTART:
		return !before && after;
	default:
		return before && !after;
	}
}

/* Adds the thread at pc, and all it reaches without reading a byte, to list (threads waiting
 * for the byte at pos); each instruction at most once per step. */
static void add(struct vm *vm, uint16_t *list, size_t *n, uint16_t pc, size_t pos)
{
	size_t top = 0;

	vm->stack[top++] = pc;
	while (top && !vm->matched) {
		const struct inst *in = &vm->rx->prog[pc = vm->stack[--top]];

		if (vm->mark[pc] == vm->step)
			continue;
		vm->mark[pc] = vm->step;
		switch (in->op) {
		case OP_JMP:
			vm->stack[top++] = in->x;
			break;
		case OP_SPLIT:
			vm->stack[top++] = in->y;
			vm->stack[top++] = in->x;
			break;
		case OP_ASSERT:
			if (holds(vm, in->arg, pos))
				vm->stack[top++] = (uint16_t)(pc + 1);
			break;
		case OP_MATCH:
			vm->matched = true;
			break;
		default:
			list[(*n)++] = pc;
			break;
		}
	}
}

bool rx_search(const struct rx *rx, const char *text, size_t len)
{
	/* an add pushes at most two instructions (a split's) for each one it takes, each taken
	 * once per step, plus the one it starts from; a list holds each at most once per step */
	uint16_t *mem = xmalloc((4 * rx->n + 1) * sizeof(uint16_t));
	uint16_t *cur = mem, *next = mem + rx->n;
	struct vm vm = {rx,
			(const unsigned char *)text,
			len,
			mem + 2 * rx->n,
			xcalloc(rx->n, sizeof(uint32_t)),
			1,
			false};
	size_t ncur = 0;

	add(&vm, cur, &ncur, 0, 0);
	for (size_t pos = 0; pos < len && !vm.matched; pos++) {
		unsigned char c = vm.text[pos];
		size_t nnext = 0;
		uint16_t *swap;

		vm.step++;
		for (size_t i = 0; i < ncur && !vm.matched; i++) {
			const struct inst *in = &rx->prog[cur[i]];

			if (set_has(rx->sets[in->x], c))
				add(&vm, next, &nnext, (uint16_t)(cur[i] + 1), pos + 1);
		}
		/* unanchored: a match may also start at the next byte */
		add(&vm, next, &nnext, 0, pos + 1);
		swap = cur;
		cur = next;
		next = swap;
		ncur = nnext;
	}
	free(vm.mark);
	free(mem);
	return vm.matched;
}
