/* Reads and poll of open control files: snapshots read back, output streams and awaited
 * answers (exit, ready, result) parked until they have something, a handle's run number. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "ctl.h"
#include "ctlfile_priv.h"
#include "job.h"
#include "reply.h"
#include "result.h"
#include "run.h"
#include "session.h"
#include "xmalloc.h"

#define STREAM_REPLY_MAX (512u << 10)

/* The result is rendered once, by the first read after the run ended, so every read of this
 * open file sees the same document whatever its offsets and sizes. */
static void reply_result(fuse_req_t req, struct ctlfh *fh, size_t size, off_t off)
{
	int rc = 0;

	pthread_mutex_lock(&fh->h.lock);
	if (!fh->snap)
		rc = result_render(fh->run, session_id(fh->s), &fh->snap, &fh->snaplen);
	pthread_mutex_unlock(&fh->h.lock);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		reply_slice(req, fh->snap, fh->snaplen, size, off);
}

/* Answers a read of stdout/stderr/exit/result, or returns -EAGAIN (w queued if given). */
static int try_read(fuse_req_t req, struct fhandle *h, size_t size, off_t off, struct waiter *w)
{
	struct ctlfh *fh = container_of(h, struct ctlfh, h);
	char text[16];
	unsigned port;
	size_t n;
	int fd, status;

	if (fh->kind == K_READY) {
		if (job_ready(fh->job, &port, w) < 0)
			return -EAGAIN;
		text[0] = '\0'; /* port 0: it ended, an empty answer */
		if (port)
			snprintf(text, sizeof(text), "%u\n", port);
		reply_slice(req, text, strlen(text), size, off);
		return 0;
	}
	if (fh->kind == K_EXIT) {
		if (run_wait_exit(fh->run, &status, w) < 0)
			return -EAGAIN;
		snprintf(text, sizeof(text), "%d\n", status);
		reply_slice(req, text, strlen(text), size, off);
		return 0;
	}
	if (fh->kind == K_RESULT) {
		if (run_wait_exit(fh->run, &status, w) < 0)
			return -EAGAIN;
		reply_result(req, fh, size, off);
		return 0;
	}
	/* A reply libfuse can splice whole: its pipe holds 1 MiB at most, and a larger reply went
	 * through a malloc'd copy (a reader's next read takes the rest). */
	if (size > STREAM_REPLY_MAX)
		size = STREAM_REPLY_MAX;
	if (run_read_extent(fh->run, stream_of(fh->kind), off, size, &fd, &n, w) < 0)
		return -EAGAIN;
	/* Before the reply: the reader's next poll may be served at once, on another thread. */
	pthread_mutex_lock(&fh->h.lock);
	fh->pos = off + (off_t)n;
	pthread_mutex_unlock(&fh->h.lock);
	reply_extent(req, fd, n, off);
	return 0;
}

/* A handle's read: what was written is submitted, and the run number is read back once, from
 * wherever the file offset is (it sits past the command written). -ENODATA if the handle has
 * submitted nothing: the file then reads as a plain one. */
static int read_answer(fuse_req_t req, struct ctlfh *fh, size_t size)
{
	size_t len;
	int rc = 0;

	pthread_mutex_lock(&fh->h.lock);
	if (fh->wlen)
		rc = submit_answer(fh);
	if (rc == 0 && !fh->anslen)
		rc = -ENODATA;
	if (rc < 0) {
		pthread_mutex_unlock(&fh->h.lock);
		return rc;
	}
	len = fh->anslen - fh->ansoff < size ? fh->anslen - fh->ansoff : size;
	fuse_reply_buf(req, fh->answer + fh->ansoff, len);
	fh->ansoff += len;
	pthread_mutex_unlock(&fh->h.lock);
	return 0;
}

void ctl_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct ctlfh *fh = fh_of(fi);
	int rc;

	if (fh->handle && (rc = read_answer(req, fh, size)) != -ENODATA) {
		if (rc < 0)
			fuse_reply_err(req, -rc);
		return;
	}
	/* Once answered, the file may be released at once: hold fh until we are done with it. */
	fhandle_ref(&fh->h);
	if (!is_stream(fh->kind) && !is_awaited(fh->kind)) {
		reply_slice(req, fh->snap, fh->snaplen, size, off);
	} else if (!fh->run && fh->kind != K_READY) {
		fuse_reply_buf(req, NULL, 0); /* no command yet: empty */
	} else {
		fhandle_read(req, &fh->h, size, off, fi->flags, try_read);
		return;
	}
	fhandle_unref(&fh->h);
}

static bool poll_ready(struct fhandle *h, struct waiter *w)
{
	struct ctlfh *fh = container_of(h, struct ctlfh, h);
	int status;

	if (fh->kind == K_EXIT || fh->kind == K_RESULT)
		return run_wait_exit(fh->run, &status, w) == 0;
	return run_poll(fh->run, stream_of(fh->kind), fh->pos, w);
}

void ctl_poll(fuse_req_t req, struct fuse_file_info *fi, struct fuse_pollhandle *ph)
{
	struct ctlfh *fh = fh_of(fi);
	unsigned revents = POLLIN | POLLRDNORM;
	bool pollable;

	if (fh->writable)
		revents |= POLLOUT | POLLWRNORM;
	pollable = fh->run && (is_stream(fh->kind) || fh->kind == K_EXIT || fh->kind == K_RESULT);
	fhandle_poll(req, &fh->h, ph, revents, pollable ? poll_ready : NULL);
}
