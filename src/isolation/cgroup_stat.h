/* What a group's processes use, for the metrics files (docs/metrics.md): read from the group's
 * cgroup files (v2, or v1's memory and pids controllers) and, where the group's files do not
 * say (v1 has no CPU or IO accounting in the groups sbxfs makes), summed from /proc over the
 * group's live processes. A value no source gives is marked absent, never zero. */
#ifndef SBX_CGROUP_STAT_H
#define SBX_CGROUP_STAT_H

#include <stdbool.h>
#include <stdint.h>

struct cgroup;

enum cg_stat {
	CGS_CPU_USEC,     /* CPU time, user and system */
	CGS_MEM,          /* memory in use, bytes */
	CGS_MEM_PEAK,     /* the most in use since the group was made */
	CGS_MEM_MAX,      /* its limit (absent: none) */
	CGS_EV_HIGH,      /* memory.events: times over memory.high */
	CGS_EV_MAX,       /* times at its limit */
	CGS_EV_OOM,       /* times the limit could not be kept */
	CGS_EV_OOM_KILL,  /* processes the OOM killer took */
	CGS_IO_READ,      /* bytes read from and written to block devices */
	CGS_IO_WRITE,
	CGS_PIDS,         /* processes now */
	CGS_PIDS_MAX,     /* their limit (absent: none) */
	CGS_OPEN_FILES,   /* descriptors its processes hold */
	CGS_N
};

struct cg_stats {
	uint64_t v[CGS_N];
	bool has[CGS_N];
	bool from_proc[CGS_N]; /* summed over live processes, not the group's own count */
};

/* The stats of cg and every group below it (cg NULL: nothing, all absent). */
void cgroup_stats(struct cgroup *cg, struct cg_stats *st);
/* How many times a fork in cg failed at its pids.max (its pids.events "max"; 0 without one). */
uint64_t cgroup_pids_max_hits(const struct cgroup *cg);

#endif
