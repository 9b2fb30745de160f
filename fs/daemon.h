/* Becoming a daemon once the mount is up, with the starting process reporting the outcome. */
#ifndef SBX_DAEMON_H
#define SBX_DAEMON_H

/* Forks. The parent waits for the child's word and exits: 0 once MOUNTPOINT answers, 1 with
 * the child's error message otherwise. The child returns, in a session of its own, in /, with
 * stdio on /dev/null; it will write its pid to PIDFILE once ready (for systemd's PIDFile=). */
void daemon_start(const char *mountpoint, const char *pidfile);
/* The child writes its pid file and tells the parent it serves (a no-op in the foreground).
 * Any thread; after daemon_end, only a pid file is no longer written. */
void daemon_ready(void);
/* Removes the pid file at the daemon's end. */
void daemon_end(void);
/* The child tells the parent why it does not start (the parent prints it). */
void daemon_failed(const char *why);

#endif
