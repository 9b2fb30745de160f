/* Freezing groups: the freeze and thaw a kill does around its signals (cgroup_kill.c), and a
 * freeze held for a while, with its outcome known, around a moment that must see the sandbox
 * still (a snapshot's, a restore's). */
#include "cgroup.h"
#include "cgroup_priv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "xmalloc.h"

/* How long a freeze that was asked to complete may take: tasks in the middle of a system call
 * freeze when it returns, mostly within microseconds; one stuck in the kernel (a hung NFS read)
 * never does. */
#define FREEZE_WAIT_MS 2000

bool cg_is_frozen(const struct cgroup *cg)
{
	char buf[512];

	if (cg_is_v1())
		return cg_read_file(cg->dir[0], "freezer.state", buf, sizeof(buf)) > 0 &&
		       strncmp(buf, "FROZEN", 6) == 0;
	return cg_read_file(cg->dir[0], "cgroup.events", buf, sizeof(buf)) > 0 &&
	       strstr(buf, "frozen 1") != NULL;
}

/* Freezing takes a moment, mostly some microseconds: look again soon, then less often (a kill
 * waited a whole millisecond here). Whether it is frozen within ms. */
static bool wait_frozen(const struct cgroup *cg, long ms)
{
	for (long us = 20, waited = 0; waited < ms * 1000; waited += us) {
		struct timespec ts = {0, us * 1000};

		if (cg_is_frozen(cg))
			return true;
		nanosleep(&ts, NULL);
		if (us < 1000)
			us *= 2;
	}
	return cg_is_frozen(cg);
}

static int write_state(const struct cgroup *cg, bool on)
{
	return cg_is_v1() ? cg_write_file(cg->dir[0], "freezer.state", on ? "FROZEN" : "THAWED")
			  : cg_write_file(cg->dir[0], "cgroup.freeze", on ? "1" : "0");
}

void cg_set_frozen(const struct cgroup *cg, bool on)
{
	int rc = write_state(cg, on);

	/* A group already removed (a terminal's, ended while the daemon stops) has nothing left to
	 * hold back. */
	if (rc == -ENOENT)
		return;
	if (rc < 0) {
		errno = -rc;
		log_warn("cgroup %s: %s", cg->dir[0], on ? "freeze" : "thaw");
		return;
	}
	/* Bounded near 200 ms so a stuck group can't hang the daemon. */
	if (on)
		wait_frozen(cg, 200);
}

int cgroup_freeze(struct cgroup *cg, bool on)
{
	int rc;

	if (!cg || !cg->dir[0])
		return -EOPNOTSUPP;
	if ((rc = write_state(cg, on)) < 0)
		return rc;
	if (!on || wait_frozen(cg, FREEZE_WAIT_MS))
		return 0;
	write_state(cg, false);
	log_warnx("cgroup %s: not frozen after %d ms (a process stuck in the kernel?)", cg->dir[0],
		  FREEZE_WAIT_MS);
	return -ETIMEDOUT;
}

struct pid_list {
	pid_t *v;
	size_t n;
};

static void add_tree(const char *dir, void *arg)
{
	struct pid_list *pl = arg;
	pid_t *here;
	size_t k = cg_read_pids(dir, &here);

	pl->v = xrealloc(pl->v, (pl->n + k + 1) * sizeof(pid_t));
	memcpy(pl->v + pl->n, here, k * sizeof(pid_t));
	pl->n += k;
	free(here);
	cg_for_each_child(dir, add_tree, pl);
}

size_t cgroup_tree_pids(struct cgroup *cg, pid_t **pids)
{
	struct pid_list pl = {xmalloc(sizeof(pid_t)), 0};

	if (cg)
		add_tree(cg->dir[0], &pl);
	*pids = pl.v;
	return pl.n;
}
