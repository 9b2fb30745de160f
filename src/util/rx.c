/* Linear-time regular expressions (see rx.h): code generation from the parser's tree
 * (rx_parse.c) with bounded repetitions expanded, and a Pike VM that keeps one thread per
 * instruction, so each byte of the text costs at most one step per instruction. */
#include "rx.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rx_priv.h"
#include "xmalloc.h"

enum op { OP_SET, OP_ASSERT, OP_SPLIT, OP_JMP, OP_MATCH };

struct inst {
	uint8_t op;
	uint8_t arg;   /* OP_ASSERT: its kind */
	uint16_t x, y; /* OP_SET: the set; OP_JMP: x; OP_SPLIT: x and y */
};

struct rx {
	size_t n;
	struct inst *prog;
	rx_byteset *sets;
};

static bool set_has(const uint8_t *s, unsigned c)
{
	return s[c >> 3] & (1u << (c & 7));
}

/* Instructions node takes; capped just past RX_PROG_MAX so sums cannot overflow. */
static uint64_t size_of(const struct rx_tree *t, uint16_t i)
{
	const struct rx_node *n = &t->nodes[i];
	uint64_t s, x;

	switch (n->kind) {
	case N_EMPTY:
		return 0;
	case N_SET:
	case N_ASSERT:
		return 1;
	case N_CAT:
		s = size_of(t, n->a) + size_of(t, n->b);
		break;
	case N_ALT:
		s = size_of(t, n->a) + size_of(t, n->b) + 2;
		break;
	default:
		x = size_of(t, n->a);
		s = n->min * x +
		    (n->max == RX_REP_INF ? x + 2 : (uint64_t)(n->max - n->min) * (x + 1));
		break;
	}
	return s > RX_PROG_MAX ? RX_PROG_MAX + 1 : s;
}

static void put(struct rx *rx, enum op op, unsigned arg, size_t x, size_t y)
{
	rx->prog[rx->n++] = (struct inst){(uint8_t)op, (uint8_t)arg, (uint16_t)x, (uint16_t)y};
}

static void emit(const struct rx_tree *t, struct rx *rx, uint16_t i)
{
	const struct rx_node *n = &t->nodes[i];
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
		emit(t, rx, n->a);
		emit(t, rx, n->b);
		break;
	case N_ALT:
		at = rx->n;
		put(rx, OP_SPLIT, 0, at + 1, 0);
		emit(t, rx, n->a);
		body = rx->n;
		put(rx, OP_JMP, 0, 0, 0);
		rx->prog[at].y = (uint16_t)rx->n;
		emit(t, rx, n->b);
		rx->prog[body].x = (uint16_t)rx->n;
		break;
	default:
		for (unsigned k = 0; k < n->min; k++)
			emit(t, rx, n->a);
		if (n->max == RX_REP_INF) {
			at = rx->n;
			put(rx, OP_SPLIT, 0, at + 1, 0);
			emit(t, rx, n->a);
			put(rx, OP_JMP, 0, at, 0);
			rx->prog[at].y = (uint16_t)rx->n;
			break;
		}
		/* each optional copy may skip to the end of them all: x?x?x? matches what
		 * x{0,3} does */
		body = rx->n + (size_t)(n->max - n->min) * (size_t)(size_of(t, n->a) + 1);
		for (unsigned k = n->min; k < n->max; k++) {
			put(rx, OP_SPLIT, 0, rx->n + 1, body);
			emit(t, rx, n->a);
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
	struct rx_tree t;
	struct rx *rx;
	uint64_t size;

	*out = NULL;
	if (len > RX_PATTERN_MAX || memchr(pattern, '\0', len) || rx_parse(pattern, len, &t) < 0)
		return -EINVAL;
	size = size_of(&t, t.root);
	if (size + 1 > RX_PROG_MAX) {
		free(t.nodes);
		free(t.sets);
		return -EINVAL;
	}
	rx = xcalloc(1, sizeof(*rx));
	rx->prog = xcalloc((size_t)size + 1, sizeof(*rx->prog));
	emit(&t, rx, t.root);
	put(rx, OP_MATCH, 0, 0, 0);
	rx->sets = t.sets;
	free(t.nodes);
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
	bool before = pos > 0 && rx_is_word(vm->text[pos - 1]);
	bool after = pos < vm->len && rx_is_word(vm->text[pos]);

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
