/* The fleet's bounds (fleet_priv.h): how many sandboxes, how many with a daemon, and budgets of
 * memory and disk summed over the sandboxes' own configs: memory_max of each that has a daemon
 * (a sleeping or failed one holds none), workspace_max of each there is. A sandbox whose own
 * bound is max fits no budget: the budget could not hold. */
#include "fleet_priv.h"

#include <errno.h>
#include <stdio.h>

#include "config.h"
#include "xmalloc.h"

int bounds_cost(const char *ini, uint64_t *memory, uint64_t *disk, char *why, size_t whylen)
{
	struct config c;
	char err[384];
	int rc;

	config_defaults(&c);
	rc = ini[0] ? config_load(&c, ini, err, sizeof(err)) : 0;
	if (rc < 0)
		snprintf(why, whylen, "its config: %s", err);
	*memory = c.memory_max;
	*disk = c.workspace_max;
	config_free(&c);
	return rc;
}

static bool has_daemon(const struct box *b)
{
	return b->info.state == FLEET_STARTING || b->info.state == FLEET_RUNNING ||
	       b->info.state == FLEET_WAKING || b->info.state == FLEET_STOPPING;
}

struct usage {
	unsigned running;
	uint64_t memory, disk;
};

static struct usage usage(void)
{
	struct usage u = {0};
	struct box *b;

	TAILQ_FOREACH(b, &fleet_boxes, link)
	{
		if (has_daemon(b)) {
			u.running++;
			u.memory += b->memory;
		}
		u.disk += b->disk;
	}
	return u;
}

#define MIB(x) ((unsigned long long)((x) >> 20))

/* Whether what is used plus need stays within budget (named opt, of key); why if not. */
static bool within(uint64_t used, uint64_t need, uint64_t budget, const char *opt, const char *key,
		   char *why, size_t whylen)
{
	if (!budget)
		return true;
	if (!need) {
		snprintf(why, whylen, "its %s is max, and %s needs one", key, opt);
		return false;
	}
	if (used + need <= budget)
		return true;
	snprintf(why, whylen, "%llu MiB of %s taken, %llu MiB more is past %s %llu MiB", MIB(used),
		 key, MIB(need), opt, MIB(budget));
	return false;
}

bool bounds_fit(uint64_t memory, uint64_t disk, bool new_box, char *why, size_t whylen)
{
	struct usage u = usage();

	if (new_box && fleet_nboxes >= fleet_cfg.max) {
		snprintf(why, whylen, "%u sandboxes, and --max is %u", fleet_nboxes, fleet_cfg.max);
		return false;
	}
	if (fleet_cfg.max_running && u.running >= fleet_cfg.max_running) {
		snprintf(why, whylen, "%u running, and --max-running is %u", u.running,
			 fleet_cfg.max_running);
		return false;
	}
	return within(u.memory, memory, fleet_cfg.memory_budget, "--memory-budget", "memory_max",
		      why, whylen) &&
	       (!new_box || within(u.disk, disk, fleet_cfg.disk_budget, "--disk-budget",
				   "workspace_max", why, whylen));
}

bool bounds_fit_change(struct box *b, uint64_t memory, uint64_t disk, char *why, size_t whylen)
{
	uint64_t was_memory = b->memory, was_disk = b->disk;
	struct usage u;

	b->memory = b->disk = 0;
	u = usage();
	b->memory = was_memory;
	b->disk = was_disk;
	return (!has_daemon(b) || within(u.memory, memory, fleet_cfg.memory_budget,
					 "--memory-budget", "memory_max", why, whylen)) &&
	       within(u.disk, disk, fleet_cfg.disk_budget, "--disk-budget", "workspace_max", why,
		      whylen);
}

char *bounds_status(void)
{
	struct usage u = usage();

	return xasprintf("max_running %u\nmemory_budget %llu\nmemory_used %llu\ndisk_budget %llu\n"
			 "disk_used %llu\n",
			 fleet_cfg.max_running, (unsigned long long)fleet_cfg.memory_budget,
			 (unsigned long long)u.memory, (unsigned long long)fleet_cfg.disk_budget,
			 (unsigned long long)u.disk);
}
