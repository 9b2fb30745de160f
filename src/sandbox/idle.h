/* Sleep after [sandbox] sleep_after seconds idle: the daemon stops itself, leaving
 * STATE_DIR/slept, so that a fleet (src/fleet) shows the sandbox sleeping and starts it again
 * on its next use. Idle is: nothing runs (busy.h), no connection through an exposed port is
 * open, no request came to the mount (idle_touch), and, checked last, the owner's held() says no
 * process holds the mount. STATE_DIR/keep_alive keeps the sandbox awake. */
#ifndef SBX_IDLE_H
#define SBX_IDLE_H

#include <stdbool.h>

struct idle_cbs {
	bool (*held)(void);  /* whether a process holds a file or directory of the mount */
	void (*sleep)(void); /* stops the daemon cleanly; any thread */
};

/* Once the loop runs (sandbox_start). Does nothing with sleep_after 0, but remove the marker a
 * sleep before left. */
void idle_start(unsigned sleep_after_s, const char *state_dir, const struct idle_cbs *cbs);
/* A request came to the mount: any thread, cheap. */
void idle_touch(void);
/* Before sandbox_stop: no check runs after it. */
void idle_stop(void);

#endif
