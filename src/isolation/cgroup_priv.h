/* What cgroup.c and cgroup_kill.c share: a group's directories and the files in them. */
#ifndef SBX_CGROUP_PRIV_H
#define SBX_CGROUP_PRIV_H

#include <stdbool.h>
#include <sys/types.h>

enum cg_mode { CG_NONE, CG_V1, CG_V2 };

#define V1_FREEZER 0
#define V1_PIDS	   1
#define V1_MEMORY  2
#define V1_CPU	   3
#define NCTRL	   4

struct cgroup {
	char *dir[NCTRL]; /* v1: one per controller (NULL if absent); v2: dir[0] only */
};

bool cg_is_v1(void);
/* One value into, or up to size - 1 bytes out of (NUL-terminated), dir/name; -errno. Both draw
 * on the descriptor reserve: a kill must work at the fd limit. */
int cg_write_file(const char *dir, const char *name, const char *value);
ssize_t cg_read_file(const char *dir, const char *name, char *buf, size_t size);
/* The processes in dir (host pids); caller frees *pids. */
size_t cg_read_pids(const char *dir, pid_t **pids);
/* Calls fn on every child group of dir. */
void cg_for_each_child(const char *dir, void (*fn)(const char *sub, void *arg), void *arg);
void cg_sleep_ms(long ms);

/* cgroup_freeze.c: whether cg is frozen (all of it, the groups below included); freezing cg
 * (waiting for it, near 200 ms at most) or thawing it, failures logged. */
bool cg_is_frozen(const struct cgroup *cg);
void cg_set_frozen(const struct cgroup *cg, bool on);

/* cgroup_kill.c: freezes cg (with tree, every group below it too), sends sig to every process but
 * keep (keep_sig to keep, in the same frozen moment), thaws; a SIGKILL repeats until nothing
 * but keep is left, for a bounded time. Returns how many processes were signalled. */
int cg_signal_dir(const struct cgroup *cg, bool tree, pid_t keep, int keep_sig, int sig);

#endif
