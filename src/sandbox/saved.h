/* What outlives the daemon: the state a restart (a new daemon on the same state dir, after an
 * unmount, a crash or a reboot) brings back. */
#ifndef SBX_SAVED_H
#define SBX_SAVED_H

/* Before anything changes: where it is kept (STATE_DIR/saved); from now on, changes are saved
 * shortly after they happen (changes.h). */
void saved_init(const char *state_dir);
/* Once the default session, the network, the ports and the loop are up, before the mount is
 * served: brings back what the last daemon saved, and waits (10 s at most) for the sessions'
 * shells to be back in their cwd. What is refused is logged and in the errors file. */
void saved_restore(void);
/* At a clean stop, before the sessions go: saves what is current one last time, and nothing
 * after. */
void saved_stop(void);

#endif
