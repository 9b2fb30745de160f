/* The sandbox's stderr in the daemon's log: what bwrap, its init and the launcher write to the
 * pipe that is their stderr. Commands can reach that pipe too (bwrap's init keeps it, and is
 * theirs to open through /proc/1/fd/2), so its lines must neither pass for the daemon's nor
 * flood the log: each is prefixed "sandbox: ", its control bytes escaped, cut at
 * ERRLOG_LINE_MAX bytes, and at most ERRLOG_RATE lines a second go to the log (bursts of
 * ERRLOG_BURST); the rest are counted, and the count is logged once a second. */
#ifndef SBX_ERRLOG_H
#define SBX_ERRLOG_H

#include <stddef.h>

#define ERRLOG_LINE_MAX 1024
#define ERRLOG_RATE	20
#define ERRLOG_BURST	100

/* Core lock held: takes ownership of the read end of the pipe and logs what arrives on it. */
void errlog_attach(int fd);
/* Core lock held: logs what is left in the pipe (a last line without its newline too), and
 * closes it. */
void errlog_detach(void);

#endif
