/* The freeze-signal-thaw recipe (see cgroup.h): a group is frozen, every process in it (or in
 * its whole tree) signalled, then thawed, so nothing forks away during a kill; a SIGKILL goes
 * round again until nothing is left. */
#include "cgroup.h"
#include "cgroup_priv.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "xmalloc.h"

/* How long a SIGKILL of a group may go on freezing and killing before it gives up (logged),
 * and how long each round waits for the killed to leave before the next one. */
#define KILL_DEADLINE_MS 2000
#define KILL_SETTLE_MS	 20

/* The pid a process has in the innermost pid namespace (what the launcher reports), or -1 if
 * it is gone. Never its host pid instead: a host pid can be any number, a spared shell's too. */
static pid_t inner_pid(pid_t pid)
{
	char path[64], line[256];
	pid_t inner = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + 6, *end;

		if (strncmp(line, "NSpid:", 6))
			continue;
		for (long v; (v = strtol(p, &end, 10)), end != p; p = end)
			inner = (pid_t)v;
		break;
	}
	fclose(f);
	return inner;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

struct pidvec {
	pid_t *v;
	size_t n;
};

static void pidvec_add(struct pidvec *pv, const pid_t *pids, size_t n)
{
	pv->v = xrealloc(pv->v, (pv->n + n + 1) * sizeof(pid_t));
	memcpy(pv->v + pv->n, pids, n * sizeof(pid_t));
	pv->n += n;
}

/* Whether a kill reached pid in an earlier round (reached is sorted), so a process still
 * dying is counted once. */
static bool reached_before(const struct pidvec *reached, pid_t pid)
{
	return reached->n && bsearch(&pid, reached->v, reached->n, sizeof(pid_t), cmp_pid);
}

/* Appends the processes of dir and of every group below it. */
static void collect_tree(const char *dir, void *pv)
{
	pid_t *here;
	size_t k = cg_read_pids(dir, &here);

	pidvec_add(pv, here, k);
	free(here);
	cg_for_each_child(dir, collect_tree, pv);
}

static void collect_pids(const struct cgroup *cg, bool tree, struct pidvec *pv)
{
	if (tree) {
		collect_tree(cg->dir[0], pv);
	} else {
		free(pv->v);
		pv->n = cg_read_pids(cg->dir[0], &pv->v);
	}
}

/* A group frozen on its own (a daemon killed in the middle of a kill) stays frozen when its
 * parent thaws, and its killed processes with it. */
static void thaw_tree(const char *dir, void *unused)
{
	struct cgroup one = {{(char *)dir}};

	if (cg_is_frozen(&one))
		cg_set_frozen(&one, false);
	cg_for_each_child(dir, thaw_tree, unused);
}

/* One frozen moment: sig to every process but keep (keep_sig to keep). Returns how many
 * processes there were besides keep; *hit counts those signalled for the first time. */
static size_t signal_round(const struct cgroup *cg, bool tree, pid_t keep, int keep_sig, int sig,
			   struct pidvec *reached, int *hit)
{
	struct pidvec pv = {NULL, 0};
	size_t others = 0;
	bool kept = !keep; /* once found, no other process needs the look at its inner pid */

	cg_set_frozen(cg, true);
	collect_pids(cg, tree, &pv);
	for (size_t i = 0; i < pv.n; i++) {
		pid_t pid = pv.v[i];

		if (!kept && inner_pid(pid) == keep) {
			if (keep_sig)
				kill(pid, keep_sig);
			kept = true;
			pv.v[i--] = pv.v[--pv.n]; /* not one of those killed */
			continue;
		}
		others++;
		if (kill(pid, sig) == 0 && !reached_before(reached, pid))
			(*hit)++;
	}
	cg_set_frozen(cg, false);
	if (tree)
		cg_for_each_child(cg->dir[0], thaw_tree, NULL);
	pidvec_add(reached, pv.v, pv.n);
	qsort(reached->v, reached->n, sizeof(pid_t), cmp_pid);
	free(pv.v);
	return others;
}

/* Whether nothing but keep is left, waiting up to ms for the killed to finish exiting
 * (without freezing them again, which would hold them back). */
static bool emptied(const struct cgroup *cg, bool tree, pid_t keep, long ms)
{
	/* A killed process is gone in well under a millisecond: look often. */
	const struct timespec poll = {0, 200000};

	for (long end = now_ms() + ms;; nanosleep(&poll, NULL)) {
		struct pidvec pv = {NULL, 0};
		bool only_keep;

		collect_pids(cg, tree, &pv);
		/* At most one is keep: only a lone process needs the look at its inner pid. */
		only_keep = pv.n == 0 || (pv.n == 1 && keep && inner_pid(pv.v[0]) == keep);
		free(pv.v);
		if (only_keep)
			return true;
		if (now_ms() >= end)
			return false;
	}
}

/* Freeze, signal, thaw. A SIGKILL repeats it until nothing but keep is left: where the
 * freeze did not complete in time (thousands of forking processes, a process stuck in the
 * kernel), children forked meanwhile are caught by the next round. Bounded, so a group that
 * cannot be emptied cannot hang the daemon: it is logged. */
int cg_signal_dir(const struct cgroup *cg, bool tree, pid_t keep, int keep_sig, int sig)
{
	struct pidvec reached = {NULL, 0};
	long end = now_ms() + KILL_DEADLINE_MS;
	int hit = 0, rounds = 1;
	size_t left = signal_round(cg, tree, keep, keep_sig, sig, &reached, &hit);

	while (sig == SIGKILL && left && !emptied(cg, tree, keep, KILL_SETTLE_MS)) {
		if (now_ms() >= end) {
			log_warnx("cgroup %s: not empty after %d freeze-kill rounds in %d ms",
				  cg->dir[0], rounds, KILL_DEADLINE_MS);
			break;
		}
		left = signal_round(cg, tree, keep, 0, SIGKILL, &reached, &hit);
		rounds++;
	}
	free(reached.v);
	return hit;
}

int cgroup_signal(struct cgroup *cg, pid_t keep, int sig)
{
	return cg ? cg_signal_dir(cg, false, keep, 0, sig) : 0;
}

int cgroup_signal_keep(struct cgroup *cg, pid_t keep, int keep_sig, int sig)
{
	return cg ? cg_signal_dir(cg, false, keep, keep_sig, sig) : 0;
}

int cgroup_kill_tree(struct cgroup *cg)
{
	return cg ? cg_signal_dir(cg, true, 0, 0, SIGKILL) : 0;
}
