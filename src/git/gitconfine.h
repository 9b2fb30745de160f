/* sbxfs-git's confinement with Landlock (kernel 5.13+): from gitconfine() on, the process may
 * write only below its target, and read only below the target and the given paths. */
#ifndef SBX_GITCONFINE_H
#define SBX_GITCONFINE_H

#include <stdbool.h>

/* readable: NULL-terminated host paths, directories or files; missing ones are skipped.
 * Returns 0 or -errno; *unavailable tells a kernel without Landlock. */
int gitconfine(int target_fd, const char *const *readable, bool *unavailable);

#endif
