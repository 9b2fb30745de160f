/* Which mount a mount point holds now, from the mount table: so that a watchdog cleaning up
 * after a daemon that died takes off that daemon's mount, never one made since on the same
 * path (a fleet starts the sandbox's daemon again at once). */
#ifndef SBX_MOUNTVIEW_H
#define SBX_MOUNTVIEW_H

/* The device (major << 20 | minor) of the topmost mount at path if its type is fuse.sbxfs,
 * else 0. */
unsigned long mountview_sbxfs_dev(const char *path);

#endif
