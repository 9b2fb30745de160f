/* What launch.c (the launcher's life), launch_msg.c (its messages) and launch_exec.c (starting
 * one) share. All of it under the core lock. */
#ifndef SBX_LAUNCH_PRIV_H
#define SBX_LAUNCH_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "launch.h"

extern pid_t launch_pid;
extern int launch_sock; /* -1 while a restart is pending */

/* launch_exec.c. Forks a launcher as spec says, on a new socketpair (*sock, blocking) and stderr
 * pipe (*err_pipe); 0 or -errno, and then nothing stays open. */
int launch_exec_fork(const struct launch_spec *spec, int *sock, int *err_pipe, pid_t *launcher_pid);
/* Waits (bounded) for the launcher's hello, so a sandbox that cannot start fails the mount
 * with bwrap's own words: 0, or -EIO with them in err and the launcher killed and reaped. */
int launch_exec_await_hello(int sock, int err_pipe, pid_t launcher_pid, char *err, size_t errlen);

/* launch.c, for launch_msg.c. The launcher's hello (pid 0's STARTED): once per start. */
void launch_hello(pid_t launcher, pid_t holder);
/* Whether the running launcher said its hello. */
bool launch_up(void);
/* A message for a launcher that is down and not about to restart starts one now: 0 or -errno. */
int launch_revive(void);

/* launch_netns.c, for launch.c. At the launcher's hello: takes the network namespace of the
 * sandbox that the bwrap of pid bwrap made (none if it is the daemon's own). */
void launch_netns_open(pid_t bwrap);
/* At the launcher's death: the namespace is gone with it. */
void launch_netns_close(void);

/* launch_msg.c, for launch.c. Reads launch_sock from the loop from now on. */
void launch_msg_watch(void);
/* Sends what is queued, as far as the socket takes it. */
void launch_msg_flush(void);
/* The launcher is gone: closes launch_sock, drops what was queued or received. */
void launch_msg_disconnect(void);
/* Its processes end as killed, its holds fail: their callbacks run. */
void launch_msg_fail_all(void);

#endif
