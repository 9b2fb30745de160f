/* A spool: one output stream of a command, appended from a pipe into an unnamed file in the
 * state directory and read back at any offset, so output of any size never sits in memory. */
#ifndef SBX_SPOOL_H
#define SBX_SPOOL_H

#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#include "spool_budget.h"
#include "waiter.h"

struct spool {
	int fd;
	char *path;          /* the name it would have: for messages only */
	off_t size;
	struct timespec mtime;
	off_t cap;           /* bytes kept; what comes beyond is read and dropped */
	bool truncated;
	int err;             /* errno of the first failed write to the file (then it drops), or 0 */
	bool done;           /* no more data will come */
	struct waitq waiters; /* woken when it grows or is done */
	struct spool *mirror; /* gets a copy of every byte kept here, as it comes (or NULL) */
	const struct spool *alias; /* a mirror's one feeder so far: its bytes are that file's */
	struct spool_set *set; /* its run's, in the spool budget (or NULL) */
	bool dropped;        /* emptied for newer runs' output (spool_max); what comes is dropped */
};

/* Creates the file in path's directory, unnamed (drawing on the descriptor reserve); -ENOSPC if its filesystem has no free
 * block left, so a command is refused rather than started with nowhere to put its output. */
int spool_open(struct spool *sp, const char *path, off_t cap);
/* A spool that holds nothing and has ended: the output of a command that never ran. */
void spool_empty(struct spool *sp);
/* Moves what the pipe holds into the spool, at most max bytes; past the cap, or once a write to
 * the file failed (sp->err), the bytes are read and dropped, so the writer never blocks. Returns
 * bytes taken from the pipe, 0 at EOF, -EAGAIN when the pipe is empty. Core lock held. */
ssize_t spool_fill(struct spool *sp, int pipefd, size_t max);
/* Appends bytes (daemon messages such as a shell that cannot start; a mirror's copy, kept up to
 * its cap). Core lock held. */
void spool_append(struct spool *sp, const void *buf, size_t len);
/* Core lock held: the file its bytes are read from, at their own offsets. */
int spool_read_fd(const struct spool *sp);
void spool_finish(struct spool *sp);
/* Core lock held: empties the file for the spool budget, which drops what comes from then on
 * too (readers see the output end where they are). Returns the bytes it held. */
off_t spool_drop(struct spool *sp);
/* Closes the file (which frees it), or empties it and keeps it for a later spool_open. */
void spool_close(struct spool *sp);
/* Removes the kept files; spools closed from then on remove theirs. */
void spool_pool_clear(void);

#endif
