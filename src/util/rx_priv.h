/* What rx.c and rx_parse.c share: a pattern as a tree of byte sets, assertions,
 * concatenations, alternations and repetitions. */
#ifndef SBX_RX_PRIV_H
#define SBX_RX_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RX_REP_INF UINT16_MAX

enum rx_node_kind { N_EMPTY, N_SET, N_ASSERT, N_CAT, N_ALT, N_REPEAT };
enum rx_assert_kind { A_BOL, A_EOL, A_WORDB, A_NWORDB, A_WSTART, A_WEND };

typedef uint8_t rx_byteset[32];

struct rx_node {
	uint8_t kind;
	uint8_t assert;
	uint16_t set;	   /* N_SET */
	uint16_t a, b;	   /* N_CAT and N_ALT: the two sides; N_REPEAT: a, what repeats */
	uint16_t min, max; /* N_REPEAT; max RX_REP_INF for no bound */
};

struct rx_tree {
	struct rx_node *nodes;
	size_t nnodes;
	rx_byteset *sets;
	size_t nsets;
	uint16_t root;
};

/* The tree of a pattern (its tables allocated: free nodes and sets), or -EINVAL for what
 * rx_compile refuses at parsing. */
int rx_parse(const char *pattern, size_t len, struct rx_tree *t);
/* Word bytes, for \w and the word boundaries: [A-Za-z0-9_]. */
bool rx_is_word(int c);

#endif
