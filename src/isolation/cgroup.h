/* Control groups: one group for the sandbox (its limits), a child for the launcher and one per
 * session, so a session's processes can be listed, frozen and killed together, whatever they
 * did (setsid, double fork). cgroup v2 where it is mounted with its controllers, v1 (freezer,
 * pids, memory, cpu) otherwise. */
#ifndef SBX_CGROUP_H
#define SBX_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct cgroup;

struct cg_limits {
	uint64_t memory_max; /* bytes, 0 = none */
	uint64_t pids_max;   /* 0 = none */
	double cpu_max;      /* CPUs, 0 = none */
};

/* mode: "auto", "v1", "v2" or "none". With "none" (or nothing usable in auto) every call
 * below is a no-op and cgroup_create returns NULL. Also removes groups that daemons which died
 * without cleaning up left behind. */
int cgroup_init(const char *mode, const struct cg_limits *lim, char *err, size_t errlen);
void cgroup_shutdown(void);
const char *cgroup_mode(void);
/* The group bwrap and the launcher join (NULL without cgroups). */
struct cgroup *cgroup_launcher(void);
/* The sandbox's own group, above every other (NULL without cgroups). */
struct cgroup *cgroup_sandbox(void);

/* A child of the sandbox's group, or of parent if given. */
struct cgroup *cgroup_create(struct cgroup *parent, const char *name);
/* A session's group: the same CPU weight as every other session's, and at most pids_max
 * processes (0: only the sandbox's limit), its background processes' groups included. */
void cgroup_limit_session(struct cgroup *cg, uint64_t pids_max);
/* Kills what is left, removes the group and frees cg. */
void cgroup_destroy(struct cgroup *cg);
/* Opens the cgroup.procs file(s) a process writes "0" to in order to join (drawing on the
 * descriptor reserve). Returns how many, or -errno if one cannot be opened (none is left open):
 * a process started outside its group could not be killed with it. */
int cgroup_join_fds(struct cgroup *cg, int *fds, int max);
/* Freezes the group, sends sig to every process but keep (a pid as the launcher sees it, 0:
 * none spared), thaws. Returns how many were signalled. With SIGKILL it goes on until
 * nothing but keep is left (bounded; logged if the group cannot be emptied). The groups
 * below it (background processes) are not touched. */
int cgroup_signal(struct cgroup *cg, pid_t keep, int sig);
/* The same, and keep gets keep_sig in the same frozen moment, so it has that signal pending
 * before it can see any of the others die. */
int cgroup_signal_keep(struct cgroup *cg, pid_t keep, int keep_sig, int sig);
/* SIGKILLs the group and every group below it in frozen moments until they are empty;
 * returns how many processes it killed. */
int cgroup_kill_tree(struct cgroup *cg);
/* Kills every process of the sandbox (all its groups). */
void cgroup_kill_all(void);
/* Freezes cg and every group below it, and returns once all of it is frozen: 0, -ETIMEDOUT
 * (thawed again) when a process does not freeze within 2 s, -EOPNOTSUPP without a freezer, or
 * -errno. on false: thaws it. */
int cgroup_freeze(struct cgroup *cg, bool on);
/* The processes in cg and every group below it (host pids); caller frees *pids. */
size_t cgroup_tree_pids(struct cgroup *cg, pid_t **pids);
/* The processes in the group (host pids); caller frees *pids. */
size_t cgroup_pids(struct cgroup *cg, pid_t **pids);
/* The group's directory in the memory hierarchy (v1) or its v2 directory when the memory
 * controller is enabled there; else NULL. Owned by cg. */
const char *cgroup_memory_dir(const struct cgroup *cg);
/* Whether the sandbox's group takes limits (v1, or v2 with its controllers enabled). */
bool cgroup_limits_on(void);
/* The sandbox's limits and usage, "key value" lines; caller frees. */
char *cgroup_describe(void);

#endif
