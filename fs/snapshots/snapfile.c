/* Open files of snapshots/ (see snapfs.h): clone (its open takes a snapshot and answers once it
 * is there), status (rendered at open), ctl and a snapshot's ctl (a restore line checked at
 * write(), applied at close, which answers once it is done), archive (a tar stream made as it
 * is read, in order), import/NAME (an archive written in, made a snapshot at close, all or
 * nothing), and the files of a files/ view (read-only). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fhandle.h"
#include "park.h"
#include "refusals.h"
#include "reply.h"
#include "snapfs_priv.h"
#include "snapshot.h"
#include "xmalloc.h"

/* A ctl file takes one line an open. */
#define CTL_MAX 4096

struct sfh {
	struct fhandle h; /* h.lock: everything below */
	enum snap_kind kind;
	struct snapshot *s;
	char *text; /* status, clone's answer */
	size_t len;
	struct ticket *done; /* clone: the snapshot being taken */
	char *wbuf;	     /* ctl: what was written */
	size_t wlen;
	int werr;
	struct snap_archive *ar;
	struct snap_import *im;
	uint64_t pos; /* archive, import: where the next read or write must be */
	int ierr;     /* import: the first failure */
	int fd;	      /* a files/ view's file: its open */
};

static struct fhandle_list open_files = FHANDLE_LIST_INIT(open_files);

static struct sfh *sfh_of(struct fuse_file_info *fi)
{
	return (struct sfh *)(uintptr_t)fi->fh;
}

static void sfh_free(struct fhandle *h)
{
	struct sfh *fh = container_of(h, struct sfh, h);

	if (fh->fd >= 0)
		close(fh->fd);
	if (fh->ar)
		snapshot_archive_close(fh->ar);
	if (fh->im)
		snapshot_import_abort(fh->im);
	if (fh->done)
		ticket_unref(fh->done);
	if (fh->s)
		snapshot_unref(fh->s);
	free(fh->text);
	free(fh->wbuf);
	free(fh);
}

static struct sfh *sfh_new(enum snap_kind kind)
{
	struct sfh *fh = xcalloc(1, sizeof(*fh));

	fh->kind = kind;
	fh->fd = -1;
	fhandle_init(&fh->h, &open_files, sfh_free);
	return fh;
}

/* What an open file of each kind does (rows[] below): the one access it takes, and its
 * requests. A kind without a row is a directory's. */
struct file_row {
	int access;	  /* O_RDONLY or O_WRONLY (-1: the open says why not) */
	bool nonseekable; /* read or written in order */
	/* Opens ino (access checked): answers the request itself. */
	void (*open)(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
	void (*read)(fuse_req_t req, struct sfh *fh, size_t size, off_t off);
	/* NULL: EBADF. */
	void (*write)(fuse_req_t req, struct sfh *fh, const char *buf, size_t size, off_t off);
	/* At flush (flush true) or release, with fh->h.lock held: applies what was written, 0 or
	 * -errno, and *done the ticket of what the close waits for (NULL: nothing). */
	int (*apply)(struct sfh *fh, bool flush, struct ticket **done);
};

static const struct file_row *row_of(enum snap_kind k);

static void reply_opened(fuse_req_t req, struct sfh *fh, struct fuse_file_info *fi)
{
	fi->fh = (uint64_t)(uintptr_t)fh;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fi->nonseekable = row_of(fh->kind)->nonseekable;
	fuse_reply_open(req, fi);
}

struct clone_wait {
	struct sfh *fh;
	struct fuse_file_info fi;
	bool opened;
};

static int clone_attempt(struct park *p)
{
	struct clone_wait *cw = park_arg(p);
	int result;

	if (ticket_wait(cw->fh->done, &result, park_waiter(p)) < 0)
		return -EAGAIN;
	if (result < 0) {
		fuse_reply_err(park_req(p), -result);
		return 0;
	}
	cw->opened = true;
	reply_opened(park_req(p), cw->fh, &cw->fi);
	return 0;
}

/* Not opened: an interrupted clone cancels its snapshot. */
static void clone_wait_free(void *arg)
{
	struct clone_wait *cw = arg;

	if (!cw->opened) {
		if (cw->fh->s)
			snapshot_cancel(cw->fh->s);
		fhandle_unref(&cw->fh->h);
	}
	free(cw);
}

/* clone's open takes a snapshot under a fresh name; it answers once the snapshot is there. */
static void open_clone(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char name[SNAPSHOT_NAME_MAX + 1];
	struct sfh *fh = sfh_new(snap_ino_kind(ino));
	struct clone_wait *cw;
	int rc = snapshot_clone(name, &fh->done);

	if (rc < 0) {
		fhandle_unref(&fh->h);
		fuse_reply_err(req, -rc);
		return;
	}
	fh->s = snapshot_find(name);
	fh->text = xasprintf("%s\n", name);
	fh->len = strlen(fh->text);
	cw = xcalloc(1, sizeof(*cw));
	*cw = (struct clone_wait){fh, *fi, false};
	park_request(req, clone_attempt, cw, clone_wait_free);
}

void snapfile_open_view(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct sfh *fh;
	struct stat st;
	int fd;

	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if ((fd = snapview_stat(ino, &st)) == 0 && S_ISDIR(st.st_mode))
		fd = -EISDIR;
	if (fd == 0)
		fd = snapview_open(ino);
	if (fd < 0) {
		fuse_reply_err(req, -fd);
		return;
	}
	fh = sfh_new(N_VIEW);
	fh->fd = fd;
	fi->fh = (uint64_t)(uintptr_t)fh;
	fi->keep_cache = 1; /* a snapshot never changes */
	fuse_reply_open(req, fi);
}

/* A handle of ino bound to its snapshot (none for snapshots/'s own files): -ENOENT once gone. */
static struct sfh *bind_snapshot(fuse_ino_t ino, int *rc)
{
	struct sfh *fh = sfh_new(snap_ino_kind(ino));

	*rc = 0;
	if (snap_ino_serial(ino) && !(fh->s = snapshot_find_serial(snap_ino_serial(ino))))
		*rc = -ENOENT;
	return fh;
}

static void open_done(fuse_req_t req, struct sfh *fh, int rc, struct fuse_file_info *fi)
{
	if (rc < 0) {
		fhandle_unref(&fh->h);
		fuse_reply_err(req, -rc);
	} else {
		reply_opened(req, fh, fi);
	}
}

static void open_plain(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int rc;
	struct sfh *fh = bind_snapshot(ino, &rc);

	open_done(req, fh, rc, fi);
}

/* status is rendered at open: a read gives one instant. */
static void open_status(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int rc;
	struct sfh *fh = bind_snapshot(ino, &rc);

	if (rc == 0)
		fh->text = snapshot_status(fh->s, &fh->len);
	open_done(req, fh, rc, fi);
}

static void open_archive(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int rc;
	struct sfh *fh = bind_snapshot(ino, &rc);

	if (rc == 0 && (rc = snapshot_archive_open(fh->s, &fh->ar)) == -EAGAIN)
		rc = -EBUSY; /* still being taken */
	open_done(req, fh, rc, fi);
}

/* import/NAME is being written by the one who made it. */
static void open_busy(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, EBUSY);
}

void snapfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	enum snap_kind k = snap_ino_kind(ino);
	const struct file_row *r = row_of(k);

	if (!r->open)
		fuse_reply_err(req, k >= N_MAX ? ENOENT : EISDIR);
	else if (r->access >= 0 && (fi->flags & O_ACCMODE) != r->access)
		fuse_reply_err(req, EACCES);
	else
		r->open(req, ino, fi);
}

void snapfs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		   struct fuse_file_info *fi)
{
	struct fuse_entry_param e = {0};
	struct sfh *fh;
	int rc;

	(void)mode;
	if (snap_ino_kind(parent) != N_IMPORT) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_WRONLY) {
		fuse_reply_err(req, EACCES);
		return;
	}
	fh = sfh_new(N_IMPFILE);
	if ((rc = snapshot_import_begin(name, &fh->im)) < 0) {
		fhandle_unref(&fh->h);
		fuse_reply_err(req, -rc);
		return;
	}
	e.ino = snap_ino(snapshot_import_serial(fh->im), N_IMPFILE);
	if ((rc = snapfs_stat(e.ino, &e.attr)) < 0) {
		fhandle_unref(&fh->h);
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)fh;
	fi->direct_io = 1;
	fi->nonseekable = 1;
	fuse_reply_create(req, &e, fi);
}

static void read_archive(fuse_req_t req, struct sfh *fh, size_t size, off_t off)
{
	char *buf = xmalloc(size);
	ssize_t n;

	pthread_mutex_lock(&fh->h.lock);
	n = (uint64_t)off == fh->pos ? snapshot_archive_read(fh->ar, buf, size) : -ESPIPE;
	if (n > 0)
		fh->pos += (uint64_t)n;
	pthread_mutex_unlock(&fh->h.lock);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void read_text(fuse_req_t req, struct sfh *fh, size_t size, off_t off)
{
	reply_slice(req, fh->text, fh->len, size, off);
}

static void read_node(fuse_req_t req, struct sfh *fh, size_t size, off_t off)
{
	struct stat st;

	if (fstat(fh->fd, &st) < 0)
		fuse_reply_err(req, errno);
	else
		reply_extent(req, fh->fd,
			     off >= st.st_size			   ? 0
			     : (uint64_t)(st.st_size - off) < size ? (size_t)(st.st_size - off)
								   : size,
			     off);
}

void snapfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct sfh *fh = sfh_of(fi);

	(void)ino;
	/* A reader killed meanwhile releases the file while its read is answered: fh (and its
	 * descriptor) is held until the reply is out. */
	fhandle_ref(&fh->h);
	if (row_of(fh->kind)->read)
		row_of(fh->kind)->read(req, fh, size, off);
	else
		fuse_reply_err(req, EBADF);
	fhandle_unref(&fh->h);
}

/* A ctl line: "restore [force] [DIR]" for a snapshot's; "restore [force] NAME [DIR]" for
 * snapshots/ctl, turned into the snapshot's (its name to *name), or "take NAME [DIR]" (*take
 * set, the normalized DIR in *line: "" for the whole workspace). 0 or -errno. */
static int ctl_line(struct sfh *fh, char **line, char **name, bool *take)
{
	size_t len = fh->wlen;
	char *text, *p, *rest;
	struct snapshot *named;
	bool force;
	int rc;

	*name = NULL;
	*take = false;
	if (len && fh->wbuf[len - 1] == '\n')
		len--;
	if (memchr(fh->wbuf, '\n', len) || memchr(fh->wbuf, '\0', len))
		return -EINVAL; /* one line an open */
	text = xstrndup(fh->wbuf, len);
	if (fh->s) { /* a snapshot's own ctl */
		*line = text;
		return snapshot_ctl_check(fh->s, text, len);
	}
	if (!strncmp(text, "take ", 5)) {
		*take = true;
		p = text + 5;
		rest = p + strcspn(p, " ");
		*name = xstrndup(p, (size_t)(rest - p));
		*line = snapshot_dir_normalize(*rest ? rest + 1 : "");
		free(text);
		return snapshot_name_valid(*name) && *line ? 0 : -EINVAL;
	}
	p = strncmp(text, "restore ", 8) ? NULL : text + 8;
	force = p && !strncmp(p, "force ", 6);
	if (force)
		p += 6;
	if (!p || !*p) {
		free(text);
		return -EINVAL;
	}
	rest = p + strcspn(p, " ");
	*name = xstrndup(p, (size_t)(rest - p));
	*line = xasprintf("restore%s%s", force ? " force" : "", rest);
	free(text);
	named = snapshot_find(*name);
	rc = snapshot_ctl_check(named, *line, strlen(*line));
	if (named)
		snapshot_unref(named);
	return rc;
}

/* A ctl line refused at its write, in the errors file. */
static void refuse_ctl(const struct sfh *fh, int err)
{
	char *path =
	    fh->s ? xasprintf("snapshots/%s/ctl", snapshot_name(fh->s)) : xstrdup("snapshots/ctl");

	refusal_note(path, err, "%s",
		     err == EBUSY ? "something runs in the sandbox: restore force ends it first"
		     : fh->s
			 ? "a line is restore [force] [DIR], DIR in the workspace"
			 : "a line is restore [force] NAME [DIR] or take NAME [DIR], DIR in the "
			   "workspace");
	free(path);
}

static void write_ctl(fuse_req_t req, struct sfh *fh, const char *buf, size_t size, off_t off)
{
	char *line = NULL, *name = NULL;
	bool take = false;
	int rc;

	(void)off;
	pthread_mutex_lock(&fh->h.lock);
	if (!(rc = fh->werr) && fh->wlen + size > CTL_MAX)
		rc = -EFBIG;
	if (rc == 0) {
		fh->wbuf = xrealloc(fh->wbuf, fh->wlen + size);
		memcpy(fh->wbuf + fh->wlen, buf, size);
		fh->wlen += size;
		/* Checked as soon as the line is whole. */
		if (memchr(buf, '\n', size))
			rc = ctl_line(fh, &line, &name, &take);
	}
	if (rc == 0 && name) {
		struct snapshot *s = snapshot_find(name);

		if (take ? s != NULL : s == NULL)
			rc = take ? -EEXIST : -ENOENT;
		if (s)
			snapshot_unref(s);
	}
	fh->werr = rc;
	pthread_mutex_unlock(&fh->h.lock);
	free(line);
	free(name);
	if (rc == -EINVAL || rc == -EBUSY)
		refuse_ctl(fh, -rc);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, size);
}

static void write_import(fuse_req_t req, struct sfh *fh, const char *buf, size_t size, off_t off)
{
	int rc;

	pthread_mutex_lock(&fh->h.lock);
	if (!(rc = fh->ierr) && !fh->im)
		rc = -EBADF; /* applied at an earlier close */
	else if (rc == 0 && (uint64_t)off != fh->pos)
		rc = -ESPIPE;
	if (rc == 0)
		rc = snapshot_import_write(fh->im, buf, size);
	if (rc == 0)
		fh->pos += size;
	fh->ierr = rc;
	pthread_mutex_unlock(&fh->h.lock);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, size);
}

void snapfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		  struct fuse_file_info *fi)
{
	struct sfh *fh = sfh_of(fi);

	(void)ino;
	fhandle_ref(&fh->h); /* as for a read */
	if (row_of(fh->kind)->write)
		row_of(fh->kind)->write(req, fh, buf, size, off);
	else
		fuse_reply_err(req, EBADF);
	fhandle_unref(&fh->h);
}

struct ctl_wait {
	struct ticket *done;
};

static int ctl_attempt(struct park *p)
{
	struct ctl_wait *cw = park_arg(p);
	int result;

	if (ticket_wait(cw->done, &result, park_waiter(p)) < 0)
		return -EAGAIN;
	fuse_reply_err(park_req(p), -result);
	return 0;
}

/* An interrupted close leaves the restore to finish: it is not cut short halfway. */
static void ctl_wait_free(void *arg)
{
	struct ctl_wait *cw = arg;

	ticket_unref(cw->done);
	free(cw);
}

/* What the ctl open was given, applied: 0 and *done (the restore's ticket; NULL if nothing was
 * written), or -errno. fh->h.lock held. */
static int apply_ctl(struct sfh *fh, bool flush, struct ticket **done)
{
	char *line = NULL, *name = NULL;
	struct snapshot *s;
	bool take = false;
	int rc = fh->werr;

	(void)flush;
	*done = NULL;
	if (rc == 0 && fh->wlen)
		rc = ctl_line(fh, &line, &name, &take);
	if (rc == 0 && take) {
		rc = snapshot_take_dir(name, line, done);
	} else if (rc == 0 && line) {
		s = name ? snapshot_find(name) : fh->s;
		if (!s)
			rc = -ENOENT;
		else
			rc = snapshot_ctl(s, line, strlen(line), done);
		if (s && name)
			snapshot_unref(s);
	}
	free(fh->wbuf);
	fh->wbuf = NULL;
	fh->wlen = 0;
	fh->werr = 0;
	free(line);
	free(name);
	return rc;
}

/* The import made a snapshot, all or nothing: 0 or -errno. fh->h.lock held. */
static int end_import(struct sfh *fh)
{
	int rc = fh->ierr;

	if (rc)
		snapshot_import_abort(fh->im);
	else
		rc = snapshot_import_end(fh->im);
	fh->im = NULL;
	return rc;
}

/* At the close after the writes. A shell's redirection closes its first descriptor before
 * anything is written (dup2): that close applies nothing. At release, when no flush came after
 * the writes, what was written is applied all the same; an import nothing was written to
 * leaves nothing. */
static int apply_import(struct sfh *fh, bool flush, struct ticket **done)
{
	*done = NULL;
	if (fh->im && (fh->pos || (flush && fh->ierr)))
		return end_import(fh);
	return 0;
}

void snapfs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	const struct file_row *r;
	struct ticket *done = NULL;
	struct ctl_wait *cw;
	struct sfh *fh = sfh_of(fi);
	int rc = 0;

	(void)ino;
	r = row_of(fh->kind);
	fhandle_ref(&fh->h); /* as for a read */
	pthread_mutex_lock(&fh->h.lock);
	if (r->apply)
		rc = r->apply(fh, true, &done);
	pthread_mutex_unlock(&fh->h.lock);
	fhandle_unref(&fh->h);
	if (!done) {
		fuse_reply_err(req, -rc);
		return;
	}
	/* The close answers once the restore is done. */
	cw = xmalloc(sizeof(*cw));
	cw->done = done;
	park_request(req, ctl_attempt, cw, ctl_wait_free);
}

void snapfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct sfh *fh = sfh_of(fi);
	const struct file_row *r = row_of(fh->kind);
	struct ticket *done;

	(void)ino;
	pthread_mutex_lock(&fh->h.lock);
	if (r->apply && r->apply(fh, false, &done) == 0 && done)
		ticket_unref(done); /* no one to tell the outcome */
	pthread_mutex_unlock(&fh->h.lock);
	fhandle_release(&fh->h);
	fuse_reply_err(req, 0);
}

/* Only a files/ view's file has a descriptor to seek in. */
void snapfs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi)
{
	struct sfh *fh = sfh_of(fi);
	off_t to;

	(void)ino;
	if (fh->fd < 0) {
		fuse_reply_err(req, ENXIO);
		return;
	}
	fhandle_ref(&fh->h); /* as for a read */
	to = lseek(fh->fd, off, whence);
	if (to < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_lseek(req, to);
	fhandle_unref(&fh->h);
}

static const struct file_row rows[N_MAX] = {
    [N_CLONE] = {.access = O_RDONLY, .open = open_clone, .read = read_text},
    [N_CTL] = {.access = O_WRONLY, .open = open_plain, .write = write_ctl, .apply = apply_ctl},
    [N_IMPFILE] = {.access = -1,
		   .nonseekable = true,
		   .open = open_busy,
		   .write = write_import,
		   .apply = apply_import},
    [N_STATUS] = {.access = O_RDONLY, .open = open_status, .read = read_text},
    [N_SCTL] = {.access = O_WRONLY, .open = open_plain, .write = write_ctl, .apply = apply_ctl},
    [N_ARCHIVE] = {.access = O_RDONLY,
		   .nonseekable = true,
		   .open = open_archive,
		   .read = read_archive},
    [N_VIEW] = {.read = read_node}, /* opened by the view's part */
};

static const struct file_row *row_of(enum snap_kind k)
{
	static const struct file_row none;

	return k < N_MAX ? &rows[k] : &none;
}

void snapfile_shutdown(void)
{
	fhandle_shutdown(&open_files);
	snapview_shutdown();
}
