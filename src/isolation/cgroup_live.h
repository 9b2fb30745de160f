/* Limits changed while the sandbox runs: a write of `limits` (docs/sandbox.md) names some of
 * memory_max, pids_max and cpu_max, each in the form its line reads (bytes or a size like 512M,
 * a count, CPUs or v2's "QUOTA PERIOD"; "max" for none), and they apply to the sandbox's group
 * at once, all or nothing: a value the kernel refuses (a memory limit below what the sandbox
 * holds and cannot give back: v1's EBUSY) takes back those already written. */
#ifndef SBX_CGROUP_LIVE_H
#define SBX_CGROUP_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum cg_live_key { CGL_MEMORY, CGL_PIDS, CGL_CPU, CGL_N };

struct cg_live {
	bool set[CGL_N];
	uint64_t memory;     /* bytes; 0: none */
	uint64_t pids;       /* 0: none */
	uint64_t cpu_quota;  /* microseconds a period; 0: none */
	uint64_t cpu_period; /* microseconds */
};

/* One "KEY VALUE" line (no newline) into *l: 0, or -EINVAL with why. */
int cgroup_live_parse(const char *line, size_t len, struct cg_live *l, char *why, size_t whylen);
/* Applies what l sets: 0, -EOPNOTSUPP without limits, or the kernel's -errno with why (and
 * nothing changed). */
int cgroup_live_apply(const struct cg_live *l, char *why, size_t whylen);
/* The key's name as in limits. */
const char *cgroup_live_name(enum cg_live_key k);

#endif
