/* Open control files' handles: the open (its kind's row binds it and renders its snapshot),
 * the table of open handles and their references, release and fstat. Reads and poll are in
 * ctlread.c, writes in ctlwrite.c. Readers of output are parked (park.h) rather than blocked
 * at open; every handle is direct_io and uncached. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctlfile_priv.h"
#include "envlist.h"
#include "job.h"
#include "refusals.h"
#include "park.h"
#include "run.h"
#include "session.h"
#include "xmalloc.h"

static struct fhandle_list open_files = FHANDLE_LIST_INIT(open_files);

void ctl_unbind(struct ctlfh *fh)
{
	if (fh->run)
		run_unref(fh->run);
	if (fh->stdin_writer && fh->job)
		job_stdin_close(fh->job);
	else if (fh->stdin_writer)
		session_stdin_close(fh->s);
	if (fh->job)
		job_unref(fh->job);
	if (fh->s)
		session_unref(fh->s);
}

static void fh_free(struct fhandle *h)
{
	struct ctlfh *fh = container_of(h, struct ctlfh, h);

	ctl_unbind(fh);
	if (fh->ready)
		ticket_unref(fh->ready);
	free(fh->snap);
	free(fh->wbuf);
	envedits_free(&fh->wedits);
	free(fh);
}

void ctlfile_shutdown(void)
{
	fhandle_shutdown(&open_files);
}

int ctl_bind(struct ctlfh *fh, fuse_ino_t ino)
{
	const struct kind_info *k = fh_row(fh);

	fh->s = ctl_session(ino);
	if (!fh->s)
		return -ENOENT;
	if (ino_job(ino)) {
		fh->job = job_find_id(fh->s, ino_job(ino));
		if (!fh->job)
			return -ENOENT;
		fh->run = job_run(fh->job);
	} else if (k->run) {
		fh->run = k->run(fh->s);
	} else {
		fh->run = fh->n ? session_run(fh->s, fh->n) : session_latest(fh->s);
		if (fh->n && !fh->run)
			return -ENOENT;
	}
	return 0;
}

/* clone's open makes the session; the open answers once its shell is up. */
int ctl_open_clone(struct ctlfh *fh, bool writing)
{
	char id[SESSION_ID_MAX + 1];
	int rc = session_clone(id, &fh->ready);

	(void)writing;
	if (rc < 0)
		return rc;
	fh->snap = xasprintf("%s\n", id);
	fh->snaplen = strlen(fh->snap);
	return 0;
}

/* A writer of stdin is counted: the command's stdin ends when the last one closes. */
int ctl_open_stdin(struct ctlfh *fh, bool writing)
{
	int rc;

	if (!writing)
		return 0;
	rc = fh->job ? job_stdin_open(fh->job) : session_stdin_open(fh->s);
	if (rc < 0)
		return rc;
	fh->stdin_writer = true;
	return 0;
}

/* A run's files are history, read-only; the others as their row says. */
static bool is_writable(const struct kind_info *k, fuse_ino_t ino)
{
	return k->write && ino_run(ino) == 0;
}

/* Whether the stream has a first byte or has ended; else w (if given) is queued. */
static bool stream_started(struct ctlfh *fh, struct waiter *w)
{
	size_t n;
	int fd;

	return run_read_extent(fh->run, fh_row(fh)->stream, 0, 1, &fd, &n, w) == 0;
}

struct open_req {
	struct ctlfh *fh;
	struct fuse_file_info fi;
	bool opened; /* the kernel owns fh now */
};

static void open_req_free(void *arg)
{
	struct open_req *orq = arg;

	if (!orq->opened)
		fhandle_unref(&orq->fh->h);
	free(orq);
}

static int open_attempt(struct park *p)
{
	struct open_req *orq = park_arg(p);
	int result;

	if (orq->fh->ready) {
		/* clone: the session is there once its shell is up, or the open fails */
		if (ticket_wait(orq->fh->ready, &result, park_waiter(p)) < 0)
			return -EAGAIN;
		if (result < 0) {
			fuse_reply_err(park_req(p), -result);
			return 0;
		}
		orq->opened = true;
		fuse_reply_open(park_req(p), &orq->fi);
		return 0;
	}
	if (!stream_started(orq->fh, park_waiter(p)))
		return -EAGAIN;
	orq->opened = true;
	fuse_reply_open(park_req(p), &orq->fi);
	return 0;
}

/* An empty output of a running command opens once it has a first byte (or ended): tools that
 * see an empty regular file read it as a pipe to EOF (GNU tail -f does), which would block
 * until the command ends instead of following it. clone opens once its session's shell is up. */
static void park_open(fuse_req_t req, struct ctlfh *fh, struct fuse_file_info *fi)
{
	struct open_req *orq = xmalloc(sizeof(*orq));

	*orq = (struct open_req){fh, *fi, false};
	park_request(req, open_attempt, orq, open_req_free);
}

/* What the open binds and renders, as its row says: 0 or -errno. */
static int open_bind(struct ctlfh *fh, fuse_ino_t ino, bool writing)
{
	const struct kind_info *k = fh_row(fh);
	int rc = 0;

	if (!(k->flags & KF_ROOT))
		rc = ctl_bind(fh, ino);
	if (rc == 0 && k->open)
		rc = k->open(fh, writing);
	else if (rc == 0 && k->render)
		fh->snap = k->render(fh, &fh->snaplen);
	return rc;
}

/* Whether the open waits (park_open) before it answers. */
static bool open_waits(struct ctlfh *fh, struct fuse_file_info *fi, bool writing)
{
	/* A writer (a checkout's, or its handle) does not wait for the last checkout's output. */
	return fh->ready || ((fh_row(fh)->flags & KF_STREAM) && fh->run && !writing &&
			     !(fi->flags & O_NONBLOCK) && !stream_started(fh, NULL));
}

void ctl_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	const struct kind_info *k = kind_row(ino_kind(ino));
	bool writing = (fi->flags & O_ACCMODE) != O_RDONLY;
	struct ctlfh *fh;
	int rc;

	if (!S_ISREG(k->mode)) {
		fuse_reply_err(req, k->mode ? EISDIR : ENOENT);
		return;
	}
	if (writing && !is_writable(k, ino)) {
		fuse_reply_err(req, EACCES);
		return;
	}
	fh = xcalloc(1, sizeof(*fh));
	fh->kind = ino_kind(ino);
	fh->n = ino_run(ino);
	fh->writable = is_writable(k, ino);
	fh->rh.on = (fi->flags & O_ACCMODE) == O_RDWR && (k->flags & KF_HANDLE);
	fhandle_init(&fh->h, &open_files, fh_free);
	rc = open_bind(fh, ino, writing);
	if (rc < 0) {
		fhandle_unref(&fh->h);
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)fh;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	/* A reader's close has nothing to apply: no FLUSH request for it (one per `cat exit`). */
	fi->noflush = !writing;
	if (open_waits(fh, fi, writing))
		park_open(req, fh, fi);
	else
		fuse_reply_open(req, fi);
}

void ctl_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ctlfh *fh = fh_of(fi);

	(void)ino;
	flush_pending(fh);
	fhandle_release(&fh->h);
	fuse_reply_err(req, 0);
}

int ctl_fstat_stream(struct ctlfh *fh, struct stat *st)
{
	if (!fh->run)
		return -ENOENT;
	run_stream_stat(fh->run, fh_row(fh)->stream, &st->st_size, &st->st_mtim);
	return 0;
}

int ctl_fstat_exit(struct ctlfh *fh, struct stat *st)
{
	int status;

	if (!fh->run)
		return -ENOENT;
	if (run_wait_exit(fh->run, &status, NULL) == 0)
		st->st_size = snprintf(NULL, 0, "%d\n", status);
	return 0;
}

int ctl_fstat_result(struct ctlfh *fh, struct stat *st)
{
	if (!fh->run)
		return -ENOENT;
	pthread_mutex_lock(&fh->h.lock);
	st->st_size = (off_t)fh->snaplen; /* 0 until the first read rendered it */
	pthread_mutex_unlock(&fh->h.lock);
	return 0;
}

int ctl_fstat(struct fuse_file_info *fi, struct stat *st)
{
	struct ctlfh *fh = fh_of(fi);
	const struct kind_info *k = fh_row(fh);

	if (k->fstat)
		return k->fstat(fh, st);
	if (!fh->snap)
		return -ENOENT;
	st->st_size = (off_t)fh->snaplen; /* what this open reads, to the byte */
	return 0;
}

/* The file's path in the mount, as the README writes it with its session's id and its
 * process's name in place. */
static char *path_of(const struct ctlfh *fh)
{
	const struct kind_info *k = fh_row(fh);
	const char *sid = fh->s ? session_id(fh->s) : "ID";

	if (k->path && !strncmp(k->path, "sessions/ID/", 12))
		return xasprintf("sessions/%s/%s", sid, k->path + 12);
	if (k->path)
		return xstrdup(k->path);
	if (k->where & IN_NET)
		return xasprintf("network/%s", k->name);
	if (!fh->s)
		return xstrdup(k->name);
	if (fh->job)
		return xasprintf("sessions/%s/procs/%s/%s", sid, job_name(fh->job), k->name);
	return xasprintf("sessions/%s/%s", sid, k->name);
}

void ctl_refuse(const struct ctlfh *fh, int err, const char *why)
{
	char *path = path_of(fh);

	refusal_note(path, err, "%s", why);
	free(path);
}
