/* Open files of contexts/ (see ctxfs.h): what each binds and renders at open, reads (snapshots,
 * output streams parked at their end, result and error parked until the cell ends), writes
 * checked at write() and applied at close all or nothing, the code file's run handle, poll. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "cell.h"
#include "context.h"
#include "ctxfs.h"
#include "fhandle.h"
#include "reply.h"
#include "run.h"
#include "xmalloc.h"

/* Bytes a one-value file (language, cwd, timeout) or ctl may be given in one open. */
#define SMALL_WRITE_MAX 4096

struct xfh {
	struct fhandle h; /* h.lock: snap once rendered, wbuf, pos and poll state */
	enum ctx_kind kind;
	struct context *c;
	struct cell *cell;   /* a cell's file: the cell when opened (the latest for n 0) */
	char *snap;          /* what a snapshot reads back; result and error once rendered */
	size_t snaplen;
	char *wbuf;
	size_t wlen;
	int werr;            /* the first failed write: nothing of this open applies */
	bool handle;         /* code opened read-write: a read submits and answers N */
	char answer[16];
	size_t anslen, ansoff;
	off_t pos;           /* end of the last stream read, for poll */
};

static struct fhandle_list open_files = FHANDLE_LIST_INIT(open_files);

static struct xfh *xfh_of(struct fuse_file_info *fi)
{
	return (struct xfh *)(uintptr_t)fi->fh;
}

static bool is_stream(enum ctx_kind k)
{
	return k == X_STDOUT || k == X_STDERR;
}

static bool is_awaited(enum ctx_kind k)
{
	return k == X_RESULT || k == X_ERROR;
}

static bool is_writable(enum ctx_kind k)
{
	return k == X_LANGUAGE || k == X_CWD || k == X_ENV || k == X_TIMEOUT || k == X_CTL ||
	       k == X_CODE;
}

static enum context_attr attr_of(enum ctx_kind k)
{
	return k == X_LANGUAGE ? CA_LANGUAGE
	       : k == X_CWD    ? CA_CWD
	       : k == X_ENV    ? CA_ENV
			       : CA_TIMEOUT;
}

static void xfh_free(struct fhandle *h)
{
	struct xfh *fh = container_of(h, struct xfh, h);

	if (fh->cell)
		cell_unref(fh->cell);
	if (fh->c)
		context_unref(fh->c);
	free(fh->snap);
	free(fh->wbuf);
	free(fh);
}

/* What a snapshot file reads back, rendered at open. */
static int render(struct xfh *fh, fuse_ino_t ino)
{
	char name[CONTEXT_NAME_MAX + 2];
	int rc;

	switch (fh->kind) {
	case X_CLONE:
		if ((rc = context_clone(name)) < 0)
			return rc;
		fh->snap = xasprintf("%s\n", name);
		fh->snaplen = strlen(fh->snap);
		return 0;
	case X_LANGUAGE:
	case X_CWD:
	case X_ENV:
	case X_TIMEOUT:
		fh->snap = context_attr(fh->c, attr_of(fh->kind), &fh->snaplen);
		return 0;
	case X_STATUS:
		fh->snap = context_status(fh->c, &fh->snaplen);
		return 0;
	case X_CSTATUS:
		if (fh->cell)
			fh->snap = cell_status(fh->cell, &fh->snaplen);
		return 0;
	case X_CODE:
		if (fh->cell)
			fh->snap = xmemdup(fh->cell->run->cmd, fh->snaplen = fh->cell->run->cmdlen);
		return 0;
	case X_RESFILE:
		return fh->cell ? cell_result_file(fh->cell, ctx_ino_res(ino), ctx_ino_fmt(ino),
						   &fh->snap, &fh->snaplen)
				: -ENOENT;
	default:
		return 0;
	}
}

void ctxfile_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	enum ctx_kind k = ctx_ino_kind(ino);
	int acc = fi->flags & O_ACCMODE, rc;
	struct xfh *fh;

	if (k >= X_MAX || k == X_DIR || k == X_CTX || k == X_CELLS || k == X_CELLDIR ||
	    k == X_RESULTS) {
		fuse_reply_err(req, k < X_MAX ? EISDIR : ENOENT);
		return;
	}
	if (acc != O_RDONLY && (!is_writable(k) || ctx_ino_cell(ino))) {
		fuse_reply_err(req, EACCES);
		return;
	}
	if (acc == O_RDONLY && k == X_CTL) {
		fuse_reply_err(req, EACCES);
		return;
	}
	fh = xcalloc(1, sizeof(*fh));
	fh->kind = k;
	fhandle_init(&fh->h, &open_files, xfh_free);
	fh->handle = k == X_CODE && acc == O_RDWR;
	if ((rc = ctxfs_resolve(ino, &fh->c, &fh->cell)) < 0 || (rc = render(fh, ino)) < 0) {
		fhandle_unref(&fh->h);
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)fh;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fuse_reply_open(req, fi);
}

int ctxfile_stat(struct fuse_file_info *fi, struct stat *st)
{
	struct xfh *fh = xfh_of(fi);

	if (is_stream(fh->kind) || !fh->snap)
		return -ENOENT;
	st->st_size = (off_t)fh->snaplen;
	return 0;
}

/* Rendered once, by the first read after the cell ended: every read sees one document. */
static int render_awaited(struct xfh *fh)
{
	int rc = 0;

	pthread_mutex_lock(&fh->h.lock);
	if (!fh->snap && fh->kind == X_RESULT)
		rc = cell_result_json(fh->cell, &fh->snap, &fh->snaplen);
	else if (!fh->snap)
		fh->snap = cell_error_text(fh->cell, &fh->snaplen);
	pthread_mutex_unlock(&fh->h.lock);
	return rc;
}

static int try_read(fuse_req_t req, struct fhandle *h, size_t size, off_t off, struct waiter *w)
{
	struct xfh *fh = container_of(h, struct xfh, h);
	size_t n;
	int fd, rc;

	if (is_awaited(fh->kind)) {
		if (cell_wait(fh->cell, w) < 0)
			return -EAGAIN;
		if ((rc = render_awaited(fh)) < 0)
			fuse_reply_err(req, -rc);
		else
			reply_slice(req, fh->snap, fh->snaplen, size, off);
		return 0;
	}
	if (run_read_extent(fh->cell->run, fh->kind == X_STDOUT ? RUN_STDOUT : RUN_STDERR, off,
			    size, &fd, &n, w) < 0)
		return -EAGAIN;
	/* Before the reply: the reader's next poll may be served at once, on another thread. */
	pthread_mutex_lock(&fh->h.lock);
	fh->pos = off + (off_t)n;
	pthread_mutex_unlock(&fh->h.lock);
	reply_extent(req, fd, n, off);
	return 0;
}

static int submit_locked(struct xfh *fh);

/* A run handle's read: what was written is submitted, and "N\n" read back once. */
static int read_answer(fuse_req_t req, struct xfh *fh, size_t size)
{
	size_t len;
	int rc = 0;

	pthread_mutex_lock(&fh->h.lock);
	if (fh->wlen || fh->werr)
		rc = submit_locked(fh);
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

void ctxfile_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct xfh *fh = xfh_of(fi);
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
	} else if (!fh->cell) {
		fuse_reply_buf(req, NULL, 0); /* no cell yet: empty */
	} else {
		fhandle_read(req, &fh->h, size, off, fi->flags, try_read);
		return;
	}
	fhandle_unref(&fh->h);
}

/* Checks what was written so far, as far as it can be judged before the close: whole lines of
 * the one-value files, env and ctl, the code's size and NUL bytes. */
static int check_written(struct xfh *fh)
{
	const char *nl;
	size_t upto;

	if (fh->kind == X_CODE) {
		if (fh->wlen > CONTEXT_CODE_MAX)
			return -EFBIG;
		return memchr(fh->wbuf, '\0', fh->wlen) ? -EINVAL : 0;
	}
	if (fh->wlen > (fh->kind == X_ENV ? CONTEXT_CODE_MAX : SMALL_WRITE_MAX))
		return -EFBIG;
	nl = memrchr(fh->wbuf, '\n', fh->wlen);
	upto = nl ? (size_t)(nl - fh->wbuf) + 1 : 0;
	if (!upto)
		return 0;
	if (fh->kind == X_CTL) {
		for (size_t i = 0; i < upto;) {
			const char *end = memchr(fh->wbuf + i, '\n', upto - i);
			size_t len = (size_t)(end - fh->wbuf) - i + 1;
			int rc = len > 1 ? context_ctl_check(fh->wbuf + i, len) : 0;

			if (rc < 0)
				return rc;
			i += len;
		}
		return 0;
	}
	/* language, cwd, env, timeout: the whole check, without applying (EBUSY included). */
	return context_check_attr(fh->c, attr_of(fh->kind), fh->wbuf, upto);
}

void ctxfile_write(fuse_req_t req, const char *buf, size_t size, struct fuse_file_info *fi)
{
	struct xfh *fh = xfh_of(fi);
	int rc;

	pthread_mutex_lock(&fh->h.lock);
	if (fh->werr) {
		rc = fh->werr;
	} else {
		fh->wbuf = xrealloc(fh->wbuf, fh->wlen + size + 1);
		memcpy(fh->wbuf + fh->wlen, buf, size);
		fh->wlen += size;
		fh->anslen = fh->ansoff = 0;
		rc = fh->werr = check_written(fh);
	}
	pthread_mutex_unlock(&fh->h.lock);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, size);
}

/* Each ctl line in turn; the first failure stops (its errno is the close's). */
static int apply_ctl(struct xfh *fh, const char *text, size_t len)
{
	for (size_t i = 0; i < len;) {
		const char *end = memchr(text + i, '\n', len - i);
		size_t n = end ? (size_t)(end - text) - i + 1 : len - i;
		int rc = n > 1 || text[i] != '\n' ? context_ctl(fh->c, text + i, n) : 0;

		if (rc < 0)
			return rc;
		i += n;
	}
	return 0;
}

/* fh->h.lock held: applies what was written; a code handle keeps its cell number. */
static int submit_locked(struct xfh *fh)
{
	char *text = fh->wbuf;
	size_t len = fh->wlen;
	unsigned n = 0;
	int rc = fh->werr;

	fh->wbuf = NULL;
	fh->wlen = 0;
	fh->werr = 0;
	if (rc == 0 && len) {
		if (fh->kind == X_CODE)
			rc = context_submit(fh->c, text, len, &n);
		else if (fh->kind == X_CTL)
			rc = apply_ctl(fh, text, len);
		else
			rc = context_set_attr(fh->c, attr_of(fh->kind), text, len);
	}
	if (rc == 0 && n && fh->handle) {
		fh->anslen = (size_t)snprintf(fh->answer, sizeof(fh->answer), "%u\n", n);
		fh->ansoff = 0;
	}
	free(text);
	return rc;
}

static int flush_pending(struct xfh *fh)
{
	int rc;

	pthread_mutex_lock(&fh->h.lock);
	rc = submit_locked(fh);
	pthread_mutex_unlock(&fh->h.lock);
	return rc;
}

void ctxfile_flush(fuse_req_t req, struct fuse_file_info *fi)
{
	fuse_reply_err(req, -flush_pending(xfh_of(fi)));
}

void ctxfile_release(fuse_req_t req, struct fuse_file_info *fi)
{
	struct xfh *fh = xfh_of(fi);

	flush_pending(fh);
	fhandle_release(&fh->h);
	fuse_reply_err(req, 0);
}

static bool poll_ready(struct fhandle *h, struct waiter *w)
{
	struct xfh *fh = container_of(h, struct xfh, h);

	if (is_awaited(fh->kind))
		return cell_wait(fh->cell, w) == 0;
	return run_poll(fh->cell->run, fh->kind == X_STDOUT ? RUN_STDOUT : RUN_STDERR, fh->pos, w);
}

void ctxfile_poll(fuse_req_t req, struct fuse_file_info *fi, struct fuse_pollhandle *ph)
{
	struct xfh *fh = xfh_of(fi);
	unsigned revents = POLLIN | POLLRDNORM;
	bool pollable = fh->cell && (is_stream(fh->kind) || is_awaited(fh->kind));

	if (is_writable(fh->kind))
		revents |= POLLOUT | POLLWRNORM;
	fhandle_poll(req, &fh->h, ph, revents, pollable ? poll_ready : NULL);
}

void ctxfile_shutdown(void)
{
	fhandle_shutdown(&open_files);
}
