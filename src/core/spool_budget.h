/* The spool budget ([session] spool_max): the bytes of every run's spool files together, runs
 * of sessions, background processes and checkouts alike. When a write would pass it, the oldest
 * runs' output is dropped first; a writer with no older run left to drop keeps what it has and
 * drops what comes, as past output_cap. */
#ifndef SBX_SPOOL_BUDGET_H
#define SBX_SPOOL_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

struct spool;

/* The spools of one run: they are charged, and dropped, together. */
struct spool_set {
	struct spool *spools;
	int n;
	bool listed;  /* in the budget's list, oldest first: its output may be dropped */
	bool dropped; /* its output was dropped to make room for newer runs */
	TAILQ_ENTRY(spool_set) link;
};

/* max bytes in all, 0 for no bound. */
void spool_budget_init(uint64_t max);
/* A new run's spools, the newest in the budget. */
void spool_budget_add(struct spool_set *set, struct spool *spools, int n);
/* Leaves the budget with what its spools hold: before they are closed. */
void spool_budget_remove(struct spool_set *set);
/* Core lock held: how many of want bytes the set may write now, each costing cost bytes of
 * spool, after dropping older runs' output as far as needed. */
size_t spool_budget_room(struct spool_set *set, size_t want, unsigned cost);
/* Core lock held: the set's spools grew by n bytes. */
void spool_budget_charge(size_t n);

#endif
