/* The state dir's lock: one daemon per state dir. The lock file also says which daemon holds it
 * and whether that one is stopping, so that a mount right after an unmount waits for the daemon
 * still on its way out instead of failing, and a real conflict names the other daemon. */
#ifndef SBX_STATE_LOCK_H
#define SBX_STATE_LOCK_H

#include <stddef.h>

/* Takes STATE_DIR/lock. A holder that is stopping is waited for (bounded, said on the log);
 * another one gets a moment in case it is stopping but has not said so yet. 0, or -EBUSY or
 * -errno with a reason in err. */
int state_lock_take(const char *state_dir, char *err, size_t errlen);
/* Records the daemon's pid in the lock file (after the fork into the background). */
void state_lock_running(void);
/* Records that the daemon is stopping. */
void state_lock_stopping(void);
void state_lock_release(void);
/* The lock's descriptor (-1 if none), for the watchdog to hold while it cleans up. */
int state_lock_fd(void);

#endif
