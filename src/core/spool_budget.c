/* The spool budget: a byte count of all spool files and the runs that hold them, oldest first,
 * so that making room costs one look at the list's head per run dropped. */
#include "spool_budget.h"

#include <pthread.h>

#include "spool.h"

TAILQ_HEAD(set_list, spool_set);

/* A run's last unref (and so spool_budget_remove) may come without the core lock: the list and
 * the total have their own lock, taken inside the core lock when both are. */
static pthread_mutex_t budget_mu = PTHREAD_MUTEX_INITIALIZER;
static struct set_list sets = TAILQ_HEAD_INITIALIZER(sets);
static uint64_t budget_max, budget_used;

void spool_budget_init(uint64_t max)
{
	budget_max = max;
	budget_used = 0;
}

void spool_budget_add(struct spool_set *set, struct spool *spools, int n)
{
	*set = (struct spool_set){.spools = spools, .n = n};
	for (int i = 0; i < n; i++)
		spools[i].set = set;
	pthread_mutex_lock(&budget_mu);
	TAILQ_INSERT_TAIL(&sets, set, link);
	set->listed = true;
	pthread_mutex_unlock(&budget_mu);
}

static uint64_t set_bytes(const struct spool_set *set)
{
	uint64_t n = 0;

	for (int i = 0; i < set->n; i++)
		n += (uint64_t)set->spools[i].size;
	return n;
}

void spool_budget_remove(struct spool_set *set)
{
	pthread_mutex_lock(&budget_mu);
	if (set->listed)
		TAILQ_REMOVE(&sets, set, link);
	set->listed = false;
	budget_used -= set_bytes(set);
	for (int i = 0; i < set->n; i++)
		set->spools[i].set = NULL;
	set->n = 0;
	pthread_mutex_unlock(&budget_mu);
}

/* Under budget_mu, so that the run cannot be freed meanwhile. */
static void drop_set(struct spool_set *set)
{
	TAILQ_REMOVE(&sets, set, link);
	set->listed = false;
	set->dropped = true;
	for (int i = 0; i < set->n; i++)
		budget_used -= (uint64_t)spool_drop(&set->spools[i]);
}

size_t spool_budget_room(struct spool_set *set, size_t want, unsigned cost)
{
	uint64_t need = (uint64_t)want * cost, room;
	struct spool_set *oldest;

	if (!budget_max || !set)
		return want;
	pthread_mutex_lock(&budget_mu);
	while (budget_used + need > budget_max && (oldest = TAILQ_FIRST(&sets)) && oldest != set &&
	       set->listed)
		drop_set(oldest);
	room = budget_used < budget_max ? (budget_max - budget_used) / cost : 0;
	pthread_mutex_unlock(&budget_mu);
	return room < want ? (size_t)room : want;
}

void spool_budget_charge(size_t n)
{
	pthread_mutex_lock(&budget_mu);
	budget_used += n;
	pthread_mutex_unlock(&budget_mu);
}
