/* Open control files' handles: what each kind binds and renders on open, the table of open
 * handles and their references, release and fstat. Reads and poll are in ctlread.c, writes in
 * ctlwrite.c. Readers of output and exit are parked (park.h) rather than blocked; writes are
 * checked in write() itself so tools see the errno. Every handle is direct_io and uncached. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "ctl.h"
#include "ctlfile_priv.h"
#include "envlist.h"
#include "job.h"
#include "park.h"
#include "result.h"
#include "rootenv.h"
#include "run.h"
#include "sandbox.h"
#include "session.h"
#include "ws_view.h"
#include "xmalloc.h"

static struct fhandle_list open_files = FHANDLE_LIST_INIT(open_files);

static void fh_free(struct fhandle *h)
{
	struct ctlfh *fh = container_of(h, struct ctlfh, h);

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
	termfile_shutdown();
}

/* The text of a file rendered whole when opened (and when stat'ed, for its size), or NULL for
 * the other kinds. A run's files need r, a process's need j. */
static char *render(enum ctl_kind k, struct session *s, unsigned n, struct run *r, struct job *j,
		    size_t *len)
{
	char *text;
	int status;

	switch (k) {
	case K_README:
		text = xstrdup(readme_text);
		break;
	case K_LIMITS: {
		char *sb = sandbox_describe(), *ws = ws_view_describe();

		text = xasprintf("%s%s", sb, ws);
		free(sb);
		free(ws);
		break;
	}
	case K_ENV:
		return session_env(s, len);
	case K_ROOTENV:
		return rootenv_read(len);
	case K_CWD:
		return session_cwd(s, len);
	case K_CMD:
		if (!r)
			return NULL;
		*len = r->cmdlen;
		return xmemdup(r->cmd, r->cmdlen);
	case K_TIMEOUT:
		text = xasprintf("%llu\n", (unsigned long long)session_timeout(s));
		break;
	case K_PORTS:
		text = job_ports(j);
		break;
	case K_TTY:
		text = xstrdup(job_tty(j) ? "yes\n" : "no\n");
		break;
	case K_STATUS:
		text = j ? job_status(j) : n ? run_status(r) : session_status(s, len);
		break;
	case K_RESULT:
		/* only once the run ended; before, a read waits and renders it then */
		if (!r || run_wait_exit(r, &status, NULL) < 0 ||
		    result_render(r, session_id(s), &text, len) < 0)
			return NULL;
		return text;
	default:
		return NULL;
	}
	*len = strlen(text);
	return text;
}

int ctl_rendered_size(fuse_ino_t ino, struct session *s, off_t *size)
{
	enum ctl_kind k = ino_kind(ino);
	struct job *j = NULL;
	struct run *r = NULL;
	size_t len = 0;
	char *text;

	if (k != K_README && k != K_LIMITS && k != K_ROOTENV && !s)
		return -ENOENT;
	if (k == K_PORTS || k == K_TTY || (k == K_STATUS && ino_job(ino))) {
		j = job_find_id(s, ino_job(ino));
		if (!j)
			return -ENOENT;
	} else if (k == K_STATUS && ino_run(ino)) {
		r = session_run(s, ino_run(ino));
		if (!r)
			return -ENOENT;
	} else if (k == K_RESULT) {
		r = ino_run(ino) ? session_run(s, ino_run(ino)) : session_latest(s);
	} else if (k == K_CMD) {
		return -ENOENT; /* a run's cmd has its size without rendering */
	}
	text = render(k, s, ino_run(ino), r, j, &len);
	if (r)
		run_unref(r);
	if (j)
		job_unref(j);
	if (!text)
		return -ENOENT;
	free(text);
	*size = (off_t)len;
	return 0;
}

static int open_snapshot(struct ctlfh *fh)
{
	char id[SESSION_ID_MAX + 1];
	int rc;

	switch (fh->kind) {
	case K_CLONE:
		rc = session_clone(id, &fh->ready);
		if (rc < 0)
			return rc;
		fh->snap = xasprintf("%s\n", id);
		fh->snaplen = strlen(fh->snap);
		break;
	default:
		fh->snap = render(fh->kind, fh->s, fh->n, fh->run, fh->job, &fh->snaplen);
		break;
	}
	return 0;
}

static bool is_dir(enum ctl_kind k)
{
	return k == K_ROOT || k == K_SESSIONS || k == K_SDIR || k == K_RUNS || k == K_RUNDIR;
}

static bool is_writable(enum ctl_kind k, fuse_ino_t ino)
{
	if (ino_job(ino))
		return k == K_CMD || k == K_CTL || k == K_STDIN || k == K_SIGNAL || k == K_TTY;
	return ino_run(ino) == 0 && (k == K_CMD || k == K_ENV || k == K_CWD || k == K_TIMEOUT ||
				     k == K_CTL || k == K_STDIN || k == K_CHECKOUT ||
				     k == K_JOBSCTL || k == K_ALLJOBSCTL || k == K_ROOTENV);
}

/* Binds a per-session handle to its session and run (or background process); -ENOENT if
 * either is gone. */
static int bind_session(struct ctlfh *fh, fuse_ino_t ino, bool writing)
{
	fh->s = ctl_session(ino);
	if (!fh->s)
		return -ENOENT;
	if (ino_job(ino)) {
		fh->job = job_find_id(fh->s, ino_job(ino));
		if (!fh->job)
			return -ENOENT;
		fh->run = job_run(fh->job);
	} else if (fh->kind == K_CHECKOUT) {
		fh->run = session_checkout_run(fh->s);
	} else {
		fh->run = fh->n ? session_run(fh->s, fh->n) : session_latest(fh->s);
		if (fh->n && !fh->run)
			return -ENOENT;
	}
	if (writing && fh->kind == K_STDIN) {
		int rc = fh->job ? job_stdin_open(fh->job) : session_stdin_open(fh->s);

		if (rc < 0)
			return rc;
		fh->stdin_writer = true;
	}
	return 0;
}

/* Whether the stream has a first byte or has ended; else w (if given) is queued. */
static bool stream_started(struct ctlfh *fh, struct waiter *w)
{
	size_t n;
	int fd;

	return run_read_extent(fh->run, stream_of(fh->kind), 0, 1, &fd, &n, w) == 0;
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

void ctl_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	enum ctl_kind k = ino_kind(ino);
	bool writing = (fi->flags & O_ACCMODE) != O_RDONLY;
	struct ctlfh *fh;
	int rc = 0;

	if (ino_is_term(ino)) {
		termfile_open(req, ino, fi);
		return;
	}
	if (k >= K_MAX || is_dir(k) || k == K_TERMS) {
		fuse_reply_err(req, k >= K_MAX ? ENOENT : EISDIR);
		return;
	}
	if (writing && !is_writable(k, ino)) {
		fuse_reply_err(req, EACCES);
		return;
	}
	fh = xcalloc(1, sizeof(*fh));
	fh->kind = k;
	fh->n = ino_run(ino);
	fh->writable = is_writable(k, ino);
	fh->handle = (fi->flags & O_ACCMODE) == O_RDWR && (k == K_CMD || k == K_CHECKOUT);
	fhandle_init(&fh->h, &open_files, fh_free);
	if (k > K_RUNDIR && k != K_ALLJOBSCTL && k != K_ROOTENV)
		rc = bind_session(fh, ino, writing);
	if (rc == 0)
		rc = open_snapshot(fh);
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
	/* A writer (a checkout's, or its handle) does not wait for the last checkout's output. */
	if (fh->ready || (is_stream(k) && fh->run && !writing && !(fi->flags & O_NONBLOCK) &&
			  !stream_started(fh, NULL))) {
		park_open(req, fh, fi);
		return;
	}
	fuse_reply_open(req, fi);
}

void ctl_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ctlfh *fh = fh_of(fi);

	if (ino_is_term(ino)) {
		termfile_release(req, fi);
		return;
	}
	flush_pending(fh);
	fhandle_release(&fh->h);
	fuse_reply_err(req, 0);
}

int ctlfile_stat(struct fuse_file_info *fi, struct stat *st)
{
	struct ctlfh *fh = fh_of(fi);
	int status;

	if (fh->snap && !is_stream(fh->kind) && !is_awaited(fh->kind)) {
		st->st_size = (off_t)fh->snaplen; /* what this open reads, to the byte */
		return 0;
	}

	if (!fh->run)
		return -ENOENT;
	if (is_stream(fh->kind)) {
		run_stream_stat(fh->run, stream_of(fh->kind), &st->st_size, &st->st_mtim);
		return 0;
	}
	if (fh->kind == K_EXIT) {
		if (run_wait_exit(fh->run, &status, NULL) == 0)
			st->st_size = snprintf(NULL, 0, "%d\n", status);
		return 0;
	}
	if (fh->kind == K_RESULT) {
		pthread_mutex_lock(&fh->h.lock);
		st->st_size = (off_t)fh->snaplen; /* 0 until the first read rendered it */
		pthread_mutex_unlock(&fh->h.lock);
		return 0;
	}
	return -ENOENT;
}
