/* The launcher's stdin holder: a child process that only keeps commands' stdin pipes open, so a
 * shell can open one as /proc/HOLDER/fd/N while the launcher itself stays out of reach (not
 * dumpable: nobody can open its fds). Part of sbxfs-launcher. */
#ifndef SBX_HOLDER_H
#define SBX_HOLDER_H

#include <stdint.h>
#include <sys/types.h>

/* Forks the holder; returns the launcher's end of its socket (acks arrive there, one byte per
 * hold) or -errno, and its pid in *pid. */
int holder_start(pid_t *pid);
/* Sends fd to be kept as fd number fdnum; ownership of fd stays with the caller. -errno if the
 * holder cannot be reached. */
int holder_hold(int sock, int fd, int fdnum);
/* The holder closes fdnum. */
int holder_drop(int sock, int fdnum);

#endif
