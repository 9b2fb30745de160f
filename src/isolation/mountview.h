/* The mounts the sandbox's launcher starts from. bwrap reads the whole mount table for each
 * bind it makes, so every mount it copies slows every start (a fleet of N sandboxes made each
 * start O(N) slower), and its outer process keeps the mount namespace it started in for the
 * sandbox's life. So bwrap starts in a namespace of the launcher's own that holds only what it
 * binds from: the root, /usr, /dev, /proc, /run and the daemon's staging dir. Nothing else of
 * the host's stays mounted there: a copy kept there would keep another sandbox's FUSE
 * connection or workspace image alive after the host unmounted it. */
#ifndef SBX_MOUNTVIEW_H
#define SBX_MOUNTVIEW_H

#include <sys/types.h>

/* In the launcher's child, as root, before bwrap: a mount namespace of its own, a slave of the
 * host's (nothing done in it reaches the host). 0 or -errno (then nothing may be mounted). */
int mountview_own(void);
/* Then, once what it adds is mounted: every mount detached but the root, /usr, /dev, /proc,
 * /run (the mounts themselves, not what is mounted below them) and stage (the daemon's staging
 * dir) with all below it. Async-signal-safe. 0 or -errno. */
int mountview_prune(const char *stage);
/* The device (major << 20 | minor) of the topmost mount at path if its type is fuse.sbxfs,
 * else 0: so that a watchdog cleaning up after a daemon that died takes off that daemon's
 * mount, never one made since on the same path (a fleet starts the sandbox's daemon again at
 * once). Not async-signal-safe. */
unsigned long mountview_sbxfs_dev(const char *path);

#endif
