/* Control groups: one group for the sandbox and a child per session, so a session's processes
 * can be listed, frozen and killed together, whatever they did (setsid, double fork). cgroup v2
 * where it is mounted with its controllers, v1 (freezer, pids, memory, cpu) otherwise. */
#ifndef SBX_CGROUP_H
#define SBX_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct cgroup;

/* mode: "auto", "v1", "v2" or "none". With "none" (or nothing usable in auto) every call
 * below is a no-op and cgroup_create returns NULL. */
int cgroup_init(const char *mode, char *err, size_t errlen);
void cgroup_shutdown(void);
const char *cgroup_mode(void);

struct cgroup *cgroup_create(const char *name);
/* Kills what is left, removes the group and frees cg. */
void cgroup_destroy(struct cgroup *cg);
/* Opens the cgroup.procs file(s) a process writes "0" to in order to join. Returns how many. */
int cgroup_join_fds(struct cgroup *cg, int *fds, int max);
/* Freezes the group, sends sig to every process but keep (0: none spared), thaws. Returns how
 * many were signalled. */
int cgroup_signal(struct cgroup *cg, pid_t keep, int sig);

#endif
