/* A feed: bytes written to a stdin file, staged in the daemon and delivered into the pipe a
 * process reads as its stdin. The process sees EOF once everything staged is delivered and no
 * writer holds the file open. Used by session commands and background processes alike; every
 * call with the core lock held. */
#ifndef SBX_FEED_H
#define SBX_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "loop.h"
#include "waiter.h"

struct feed {
	char *buf;
	size_t len, cap;
	int writers;            /* open handles of the stdin file for writing */
	int pipe_w;             /* the reader's pipe, -1 if none */
	struct loop_fd *pipe_lf;
	bool tty;               /* pipe_w is a pty master: EOF is typed as ^D */
	char last;              /* the last byte delivered */
	struct waitq space;     /* writers waiting for room */
};

void feed_init(struct feed *f);
void feed_free(struct feed *f);
/* Whether a starting process needs a pipe: something is staged or a writer is there. */
bool feed_wanted(const struct feed *f);
/* Starts delivering into pipe_w (taken over); feed_detach closes it. */
void feed_attach(struct feed *f, int pipe_w);
/* As feed_attach, into a pty master: EOF becomes a ^D (two after a partial line), as a
 * person at the terminal would type it. */
void feed_attach_tty(struct feed *f, int master);
void feed_detach(struct feed *f);
void feed_writer_open(struct feed *f);
void feed_writer_close(struct feed *f);
/* Takes up to len bytes (returns how many), or -EAGAIN with w queued until there is room. */
ssize_t feed_write(struct feed *f, const char *buf, size_t len, struct waiter *w);
/* Wakes parked writers so they find out their process is gone. */
void feed_wake(struct feed *f);

#endif
