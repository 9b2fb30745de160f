/* Which TCP ports a set of processes listens on, from /proc (their sockets and the listening
 * sockets of their network namespace). */
#ifndef SBX_PORTS_H
#define SBX_PORTS_H

#include <stddef.h>
#include <sys/types.h>

/* Sorted, without duplicates; caller frees *ports. */
size_t ports_listening(const pid_t *pids, size_t npids, unsigned **ports);

#endif
