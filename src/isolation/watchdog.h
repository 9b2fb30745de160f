/* The watchdog: a small process that outlives a daemon killed without warning (SIGKILL, a
 * crash) and cleans up after it: the sandbox's processes and cgroups, the staged paths, and the
 * mount. A daemon that stops normally disarms it. */
#ifndef SBX_WATCHDOG_H
#define SBX_WATCHDOG_H

#include <stddef.h>

/* cleanup runs in the watchdog once the daemon is gone (fds closed, daemon state copied). */
/* keep_fd (or -1) stays open in the watchdog until its cleanup is done: the state dir's lock,
 * so that a new daemon on the same state dir waits for the cleanup of the one that died. */
int watchdog_start(void (*cleanup)(void), int keep_fd);
void watchdog_disarm(void);

#endif
