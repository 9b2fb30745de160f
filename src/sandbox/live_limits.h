/* A write of the mount's `limits` (cgroup_live.h): the sandbox's limits changed at once, the
 * sessions' own memory limits derived again from the new memory_max, and a limits.set event in
 * the journal. */
#ifndef SBX_LIVE_LIMITS_H
#define SBX_LIVE_LIMITS_H

#include <stddef.h>

/* Checks one line (no newline): 0 or -EINVAL with why. Empty lines are none. */
int live_limits_check(const char *line, size_t len, char *why, size_t whylen);
/* Applies the lines of text, all or nothing: 0 or -errno with why. */
int live_limits_apply(const char *text, size_t len, char *why, size_t whylen);

#endif
