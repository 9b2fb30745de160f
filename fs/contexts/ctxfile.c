/* Open files of contexts/ (see ctxfs.h), each kind as its row says (ctxkinds.c): the handles,
 * what each binds and renders at open, reads (snapshots, or what the row's read waits for),
 * writes checked at write() and applied at close all or nothing, the code file's run handle,
 * poll. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cell.h"
#include "context.h"
#include "ctxfs.h"
#include "ctxfile_priv.h"
#include "ctxkind.h"
#include "fhandle.h"
#include "reply.h"
#include "xmalloc.h"

static struct fhandle_list open_files = FHANDLE_LIST_INIT(open_files);

static struct xfh *xfh_of(struct fuse_file_info *fi)
{
	return (struct xfh *)(uintptr_t)fi->fh;
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

void ctxfile_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	const struct xkind *k = ctx_row(ctx_ino_kind(ino));
	int acc = fi->flags & O_ACCMODE, rc;
	struct xfh *fh;

	if (!S_ISREG(k->mode)) {
		fuse_reply_err(req, k->mode ? EISDIR : ENOENT);
		return;
	}
	/* a cell's files are history */
	if (acc != O_RDONLY && (!k->apply || ctx_ino_cell(ino))) {
		fuse_reply_err(req, EACCES);
		return;
	}
	if (acc == O_RDONLY && (k->flags & XF_NO_READ)) {
		fuse_reply_err(req, EACCES);
		return;
	}
	fh = xcalloc(1, sizeof(*fh));
	fh->kind = ctx_ino_kind(ino);
	fhandle_init(&fh->h, &open_files, xfh_free);
	fh->rh.on = (k->flags & XF_HANDLE) && acc == O_RDWR;
	rc = ctxfs_resolve(ino, &fh->c, &fh->cell);
	if (rc == 0 && k->open)
		rc = k->open(fh);
	else if (rc == 0 && k->render)
		rc = k->render(fh->c, fh->cell, ino, &fh->snap, &fh->snaplen);
	if (rc < 0) {
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

	if ((fh_row(fh)->flags & XF_STREAM) || !fh->snap)
		return -ENOENT;
	st->st_size = (off_t)fh->snaplen;
	return 0;
}

static int submit_locked(struct xfh *fh);

static int submit(void *fh)
{
	return submit_locked(fh);
}

void ctxfile_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct xfh *fh = xfh_of(fi);
	int rc;

	(void)ino;
	if (fh->rh.on && (rc = runhandle_read(req, &fh->h, &fh->rh, size, fh->wlen || fh->werr,
					      submit, fh)) != -ENODATA) {
		if (rc < 0)
			fuse_reply_err(req, -rc);
		return;
	}
	/* Once answered, the file may be released at once: hold fh until we are done with it. */
	fhandle_ref(&fh->h);
	if (!fh_row(fh)->read) {
		reply_slice(req, fh->snap, fh->snaplen, size, off);
	} else if (!fh->cell) {
		fuse_reply_buf(req, NULL, 0); /* no cell yet: empty */
	} else {
		fhandle_read(req, &fh->h, size, off, fi->flags, fh_row(fh)->read);
		return;
	}
	fhandle_unref(&fh->h);
}

/* Checks what was written so far, as far as it can be judged before the close. */
static int check_written(struct xfh *fh)
{
	if (fh->wlen > fh_row(fh)->wmax)
		return -EFBIG;
	return fh_row(fh)->check(fh);
}

void ctxfile_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	struct xfh *fh = xfh_of(fi);
	int rc;

	(void)ino;
	(void)off;
	pthread_mutex_lock(&fh->h.lock);
	if (fh->werr) {
		rc = fh->werr;
	} else {
		fh->wbuf = xrealloc(fh->wbuf, fh->wlen + size + 1);
		memcpy(fh->wbuf + fh->wlen, buf, size);
		fh->wlen += size;
		runhandle_clear(&fh->rh);
		rc = fh->werr = check_written(fh);
	}
	pthread_mutex_unlock(&fh->h.lock);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, size);
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
	if (rc == 0 && len)
		rc = fh_row(fh)->apply(fh, text, len, &n);
	if (rc == 0)
		runhandle_set(&fh->rh, n);
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

void ctxfile_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;

	fuse_reply_err(req, -flush_pending(xfh_of(fi)));
}

void ctxfile_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct xfh *fh = xfh_of(fi);

	(void)ino;
	flush_pending(fh);
	fhandle_release(&fh->h);
	fuse_reply_err(req, 0);
}

/* Before the first cell nothing is pending: ready. */
void ctxfile_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		  struct fuse_pollhandle *ph)
{
	struct xfh *fh = xfh_of(fi);
	unsigned revents = POLLIN | POLLRDNORM;

	(void)ino;
	if (fh_row(fh)->apply)
		revents |= POLLOUT | POLLWRNORM;
	fhandle_poll(req, &fh->h, ph, revents, fh->cell ? fh_row(fh)->poll : NULL);
}

void ctxfile_shutdown(void)
{
	fhandle_shutdown(&open_files);
}
