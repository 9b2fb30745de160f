/* The mount's root: its names come from every part (README, limits, env, sessions/ and procs/
 * from the control part, contexts/, ports/, snapshots/, workspace/), so it is served here, above
 * them all. */
#ifndef SBX_ROOT_H
#define SBX_ROOT_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>

extern const struct fuse_lowlevel_ops root_ops;

/* The mount's README: every part's files, a line each (caller frees). */
char *root_readme(void);

#endif
