/* `sbxfs -u`: unmount a mount and wait for its daemon to be gone. */
#ifndef SBX_UNMOUNT_H
#define SBX_UNMOUNT_H

#include <stdbool.h>

/* Unmounts the mount and every mount on it, or nothing when it is busy (saying what holds it),
 * then waits (bounded) for the daemon that served it to exit. lazy: stops the daemon instead,
 * which detaches everything whatever holds it. Exits: 0, fusermount3's status, or 1 with why. */
void unmount_main(const char *mountpoint, bool lazy) __attribute__((noreturn));

#endif
