/* The memory side of the sandbox's groups: each session's own limit, a little below the
 * sandbox's, so that a session that runs away is OOM-killed among its own processes while the
 * other sessions keep room to answer; and how many OOM kills a group had, for the status
 * files. */
#ifndef SBX_CGROUP_MEM_H
#define SBX_CGROUP_MEM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct cgroup;

/* session_max: the limit each session's group gets, in bytes (0: none of its own). */
void cgroup_mem_init(uint64_t session_max);
/* Gives a new session's group its limit (nothing without a memory controller). */
void cgroup_mem_limit_session(struct cgroup *cg);
/* Gives cg a limit of its own of max bytes (0: none; nothing without a memory controller or
 * without cg, or in a v2 group whose parent enables none for it). A failure is logged. */
void cgroup_mem_limit(struct cgroup *cg, uint64_t max);
/* OOM kills of the group's own processes, or with tree of its child groups' too (0 without a
 * memory controller). The kernel counts a kill in the victim's group. */
uint64_t cgroup_mem_oom_kills(const struct cgroup *cg, bool tree);
struct cgroup_mem_watch;
/* Core lock held: calls fn(arg) on the loop thread, core lock held, a moment after the kernel's
 * OOM killer may have acted in cg (v1: an OOM of cg or of a group above it; v2: a change of
 * its memory.events.local); fn compares cgroup_mem_oom_kills with what it saw before. NULL
 * without a memory controller, or if the watch cannot be set up (logged). */
struct cgroup_mem_watch *cgroup_mem_watch(struct cgroup *cg, void (*fn)(void *arg), void *arg);
/* Core lock held; w may be NULL. Before the group is removed (v1 signals its removal). */
void cgroup_mem_unwatch(struct cgroup_mem_watch *w);
/* The limits file's line for the sessions' own limit, if there is one. */
void cgroup_mem_describe(FILE *out);

#endif
