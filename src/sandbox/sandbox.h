/* The sandbox as a whole: its state directory, the launcher, the event loop and the sessions.
 * Split in two so the daemon can fork into the background between preparing and starting. */
#ifndef SBX_SANDBOX_H
#define SBX_SANDBOX_H

#include <stddef.h>
#include <sys/types.h>

#include "config.h"

/* Checks and creates directories, takes the state dir lock. 0 or -errno with a reason. */
int sandbox_prepare(struct config *cfg, const char *self_exe, char *err, size_t errlen);
/* After sandbox_prepare: the user sandboxed commands run as, if not the daemon's own (1), or
 * 0 when they run as the daemon's user. */
int sandbox_user(uid_t *uid, gid_t *gid);
/* The root `limits` text: the cgroup's limits and usage, then the uid and gid the sandbox's
 * commands run as on the host, and a "sandbox down REASON" line while the sandbox fails to
 * start. Caller frees. */
char *sandbox_describe(void);
/* Lines the parts above the core add to `limits` (the FUSE side: how workspace/ is served),
 * appended in the order given; fn returns a text the caller frees. Set before the mount
 * serves. */
void sandbox_describe_also(char *(*fn)(void));
/* Starts the loop thread, the launcher, the default session and the watchdog that cleans up
 * (and unmounts mountpoint) if the daemon dies. On failure, sandbox_stop undoes what started. */
int sandbox_start(const char *mountpoint, char *err, size_t errlen);
/* The config the sandbox was prepared with. */
const struct config *sandbox_config(void);
/* Ends every session and process, stops the loop. */
void sandbox_stop(void);

#endif
