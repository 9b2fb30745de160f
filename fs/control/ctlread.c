/* Reads and poll of open control files: snapshots read back, and the reads a kind's row says
 * may wait (outputs, exit, ready, result), parked until they have something; a handle's run
 * number. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "ctlfile_priv.h"
#include "job.h"
#include "reply.h"
#include "result.h"
#include "refusals.h"
#include "run.h"
#include "session.h"
#include "xmalloc.h"

#define STREAM_REPLY_MAX (512u << 10)

static struct ctlfh *ctlfh_of(struct fhandle *h)
{
	return container_of(h, struct ctlfh, h);
}

/* Answers a read of an output, or returns -EAGAIN (w queued if given). */
int ctl_read_stream(fuse_req_t req, struct fhandle *h, size_t size, off_t off, struct waiter *w)
{
	struct ctlfh *fh = ctlfh_of(h);
	size_t n;
	int fd;

	/* A reply libfuse can splice whole: its pipe holds 1 MiB at most, and a larger reply went
	 * through a malloc'd copy (a reader's next read takes the rest). */
	if (size > STREAM_REPLY_MAX)
		size = STREAM_REPLY_MAX;
	if (run_read_extent(fh->run, fh_row(fh)->stream, off, size, &fd, &n, w) < 0)
		return -EAGAIN;
	/* Before the reply: the reader's next poll may be served at once, on another thread. */
	pthread_mutex_lock(&fh->h.lock);
	fh->pos = off + (off_t)n;
	pthread_mutex_unlock(&fh->h.lock);
	reply_extent(req, fd, n, off);
	return 0;
}

int ctl_read_exit(fuse_req_t req, struct fhandle *h, size_t size, off_t off, struct waiter *w)
{
	char text[16];
	int status;

	if (run_wait_exit(ctlfh_of(h)->run, &status, w) < 0)
		return -EAGAIN;
	snprintf(text, sizeof(text), "%d\n", status);
	reply_slice(req, text, strlen(text), size, off);
	return 0;
}

/* The process's port once it listens; empty once it ended without. */
int ctl_read_ready(fuse_req_t req, struct fhandle *h, size_t size, off_t off, struct waiter *w)
{
	char text[16];
	unsigned port;

	if (job_ready(ctlfh_of(h)->job, &port, w) < 0)
		return -EAGAIN;
	text[0] = '\0';
	if (port)
		snprintf(text, sizeof(text), "%u\n", port);
	reply_slice(req, text, strlen(text), size, off);
	return 0;
}

/* The result is rendered once, by the first read after the run ended, so every read of this
 * open file sees the same document whatever its offsets and sizes. */
int ctl_read_result(fuse_req_t req, struct fhandle *h, size_t size, off_t off, struct waiter *w)
{
	struct ctlfh *fh = ctlfh_of(h);
	int status, rc = 0;

	if (run_wait_exit(fh->run, &status, w) < 0)
		return -EAGAIN;
	pthread_mutex_lock(&fh->h.lock);
	if (!fh->snap)
		rc = result_render(fh->run, session_id(fh->s), &fh->snap, &fh->snaplen);
	pthread_mutex_unlock(&fh->h.lock);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		reply_slice(req, fh->snap, fh->snaplen, size, off);
	return 0;
}

static int submit(void *fh)
{
	return submit_answer(fh);
}

void ctl_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct ctlfh *fh = fh_of(fi);
	const struct kind_info *k = fh_row(fh);
	int rc;

	(void)ino;
	if (fh->rh.on &&
	    (rc = runhandle_read(req, &fh->h, &fh->rh, size, fh->wlen, submit, fh)) != -ENODATA) {
		if (rc < 0)
			fuse_reply_err(req, -rc);
		return;
	}
	/* Once answered, the file may be released at once: hold fh until we are done with it. */
	fhandle_ref(&fh->h);
	if (!k->read) {
		reply_slice(req, fh->snap, fh->snaplen, size, off);
	} else if (!fh->run && (k->flags & KF_RUN)) {
		fuse_reply_buf(req, NULL, 0); /* no command yet: empty */
	} else {
		fhandle_read(req, &fh->h, size, off, fi->flags, k->read);
		return;
	}
	fhandle_unref(&fh->h);
}

bool ctl_poll_stream(struct fhandle *h, struct waiter *w)
{
	struct ctlfh *fh = ctlfh_of(h);

	return run_poll(fh->run, fh_row(fh)->stream, fh->pos, w);
}

bool ctl_poll_exit(struct fhandle *h, struct waiter *w)
{
	int status;

	return run_wait_exit(ctlfh_of(h)->run, &status, w) == 0;
}

/* A file that follows a run, without one (no command yet): nothing is pending, ready. */
void ctl_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct fuse_pollhandle *ph)
{
	struct ctlfh *fh = fh_of(fi);
	const struct kind_info *k = fh_row(fh);
	unsigned revents = POLLIN | POLLRDNORM;

	(void)ino;
	if (fh->writable)
		revents |= POLLOUT | POLLWRNORM;
	fhandle_poll(req, &fh->h, ph, revents, fh->run || !(k->flags & KF_RUN) ? k->poll : NULL);
}

/* A log read like a file on disk (network/log, errors): from offset off of the open (its shift
 * added: a read below the oldest byte held starts there, and the open's later offsets follow
 * on) to the log's current end, then EOF; never waits. */
int ctl_read_log(fuse_req_t req, struct ctlfh *fh, size_t size, off_t off,
		 void (*read)(const void *src, uint64_t *off, char *buf, size_t size, size_t *n),
		 const void *src)
{
	uint64_t at;
	size_t n = 0;
	char *buf;

	pthread_mutex_lock(&fh->h.lock);
	at = (uint64_t)off + fh->shift;
	pthread_mutex_unlock(&fh->h.lock);
	buf = xmalloc(size ? size : 1);
	read(src, &at, buf, size, &n);
	pthread_mutex_lock(&fh->h.lock);
	if (at > (uint64_t)off + fh->shift)
		fh->shift = at - (uint64_t)off;
	fh->pos = (off_t)(at + n - fh->shift);
	pthread_mutex_unlock(&fh->h.lock);
	fuse_reply_buf(req, buf, n);
	free(buf);
	return 0;
}

static void read_refusals(const void *src, uint64_t *off, char *buf, size_t size, size_t *n)
{
	(void)src;
	refusals_read(off, buf, size, n);
}

void ctl_size_errors(struct ctlfh *fh, struct stat *st)
{
	(void)fh;
	st->st_size = (off_t)refusals_end();
}

int ctl_read_errors(fuse_req_t req, struct fhandle *h, size_t size, off_t off, struct waiter *w)
{
	(void)w;
	return ctl_read_log(req, container_of(h, struct ctlfh, h), size, off, read_refusals, NULL);
}
