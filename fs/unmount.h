/* `sbxfs -u`: unmount a mount and wait for its daemon to be gone. */
#ifndef SBX_UNMOUNT_H
#define SBX_UNMOUNT_H

/* Unmounts the kernel-mounted workspace, then the mount (fusermount3 -u), then waits (bounded)
 * for the daemon that served it to exit. Exits: 0, fusermount3's status, or 1 with why. */
void unmount_main(const char *mountpoint) __attribute__((noreturn));

#endif
