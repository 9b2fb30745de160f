/* Open control files: what each kind does on open, read, write, flush, release and poll.
 * Readers of output and exit are parked (park.h) rather than blocked; writes are checked in
 * write() itself so tools see the errno. Every handle is direct_io and uncached. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "ctl.h"
#include "envlist.h"
#include "job.h"
#include "log.h"
#include "park.h"
#include "result.h"
#include "rootenv.h"
#include "run.h"
#include "sandbox.h"
#include "session.h"
#include "signame.h"
#include "xmalloc.h"

#define CHECKOUT_LINE_MAX 65536 /* far above any URL and options */
/* ctl_line_split's limit: a ctl line without its newline can be no longer */
#define CTL_LINE_MAX sizeof(((struct ctl_line *)NULL)->buf)

struct ctlfh {
	enum ctl_kind kind;
	unsigned n;            /* run number for a run's files, 0 for the session's */
	bool writable;
	struct job *job;       /* a background process's files */
	bool stdin_writer;     /* counted as a writer of the session's (or job's) stdin */
	int refs;
	struct session *s;
	struct run *run;       /* stdout, stderr, exit: the latest run when opened */
	char *snap;            /* README, clone, env, cwd, cmd: the text read back */
	struct ticket *ready;  /* clone: done once the new session's shell is up */
	size_t snaplen;
	pthread_mutex_t lock;  /* wbuf and poll state */
	char *wbuf;            /* cmd, env, timeout, checkout, cwd, ctl: applied at close */
	size_t wlen;
	size_t wchecked;       /* wbuf's prefix of lines already checked */
	struct envedits wedits; /* env: those lines parsed, to check the env they would make */
	int werr;              /* the first failed write's -errno: nothing of the open applies */
	bool wdone;            /* cwd: its one path was sent */
	off_t pos;             /* end of the last read, for poll */
	struct fuse_pollhandle *ph;
	bool handle;           /* cmd or checkout opened read-write: a read answers the run number */
	char answer[16];       /* handle: "N\n" of the last submit, read once whatever the offset */
	size_t anslen, ansoff; /* anslen 0: nothing submitted through the handle since its last write */
	bool poll_armed;       /* pollw is queued (or being woken) */
	struct waiter pollw;
	LIST_ENTRY(ctlfh) link;
};

/* Handles the kernel still holds at unmount get no RELEASE: they are freed from this list. */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static LIST_HEAD(, ctlfh) open_files = LIST_HEAD_INITIALIZER(open_files);

static struct ctlfh *fh_of(struct fuse_file_info *fi)
{
	return (struct ctlfh *)(uintptr_t)fi->fh;
}

static void fh_free(struct ctlfh *fh)
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
	if (fh->ph)
		fuse_pollhandle_destroy(fh->ph);
	if (fh->ready)
		ticket_unref(fh->ready);
	pthread_mutex_destroy(&fh->lock);
	free(fh->snap);
	free(fh->wbuf);
	envedits_free(&fh->wedits);
	free(fh);
}

static void fh_unref(struct ctlfh *fh)
{
	if (__atomic_sub_fetch(&fh->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	pthread_mutex_lock(&open_lock);
	LIST_REMOVE(fh, link);
	pthread_mutex_unlock(&open_lock);
	fh_free(fh);
}

void ctlfile_shutdown(void)
{
	struct ctlfh *fh;

	pthread_mutex_lock(&open_lock);
	while ((fh = LIST_FIRST(&open_files))) {
		LIST_REMOVE(fh, link);
		fh_free(fh);
	}
	pthread_mutex_unlock(&open_lock);
	termfile_shutdown();
}

/* Files whose read waits for the run (or process) to get somewhere, then answers once. */
static bool is_awaited(enum ctl_kind k)
{
	return k == K_EXIT || k == K_READY || k == K_RESULT;
}

/* Files that read like a growing output: a checkout's progress is one too. */
static bool is_stream(enum ctl_kind k)
{
	return k == K_STDOUT || k == K_STDERR || k == K_OUTPUT || k == K_CHECKOUT;
}

static enum run_stream stream_of(enum ctl_kind k)
{
	return k == K_STDERR ? RUN_STDERR : k == K_OUTPUT ? RUN_OUTPUT : RUN_STDOUT;
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
	case K_LIMITS:
		text = sandbox_describe();
		break;
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
		fh_unref(orq->fh);
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
	fh->refs = 1;
	pthread_mutex_init(&fh->lock, NULL);
	pthread_mutex_lock(&open_lock);
	LIST_INSERT_HEAD(&open_files, fh, link);
	pthread_mutex_unlock(&open_lock);
	if (k > K_RUNDIR && k != K_ALLJOBSCTL && k != K_ROOTENV)
		rc = bind_session(fh, ino, writing);
	if (rc == 0)
		rc = open_snapshot(fh);
	if (rc < 0) {
		fh_unref(fh);
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)fh;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	/* A writer (a checkout's, or its handle) does not wait for the last checkout's output. */
	if (fh->ready || (is_stream(k) && fh->run && !writing && !(fi->flags & O_NONBLOCK) &&
			  !stream_started(fh, NULL))) {
		park_open(req, fh, fi);
		return;
	}
	fuse_reply_open(req, fi);
}

static void reply_slice(fuse_req_t req, const char *text, size_t len, size_t size, off_t off)
{
	if ((size_t)off >= len) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	fuse_reply_buf(req, text + off, len - (size_t)off < size ? len - (size_t)off : size);
}

struct read_req {
	struct ctlfh *fh;
	size_t size;
	off_t off;
};

static void read_req_free(void *arg)
{
	struct read_req *rr = arg;

	fh_unref(rr->fh);
	free(rr);
}

/* The result is rendered once, by the first read after the run ended, so every read of this
 * open file sees the same document whatever its offsets and sizes. */
static void reply_result(fuse_req_t req, struct ctlfh *fh, size_t size, off_t off)
{
	int rc = 0;

	pthread_mutex_lock(&fh->lock);
	if (!fh->snap)
		rc = result_render(fh->run, session_id(fh->s), &fh->snap, &fh->snaplen);
	pthread_mutex_unlock(&fh->lock);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		reply_slice(req, fh->snap, fh->snaplen, size, off);
}

/* Answers a read of stdout/stderr/exit/result, or returns -EAGAIN (w queued if given). */
static int try_read(fuse_req_t req, struct ctlfh *fh, size_t size, off_t off, struct waiter *w)
{
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
	if (run_read_extent(fh->run, stream_of(fh->kind), off, size, &fd, &n, w) < 0)
		return -EAGAIN;
	if (n == 0) {
		fuse_reply_buf(req, NULL, 0);
	} else {
		struct fuse_bufvec bv = FUSE_BUFVEC_INIT(n);

		bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
		bv.buf[0].fd = fd;
		bv.buf[0].pos = off;
		fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_MOVE);
	}
	pthread_mutex_lock(&fh->lock);
	fh->pos = off + (off_t)n;
	pthread_mutex_unlock(&fh->lock);
	return 0;
}

static int read_attempt(struct park *p)
{
	struct read_req *rr = park_arg(p);

	return try_read(park_req(p), rr->fh, rr->size, rr->off, park_waiter(p));
}

static int submit_answer(struct ctlfh *fh);

/* A handle's read: what was written is submitted, and the run number is read back once, from
 * wherever the file offset is (it sits past the command written). -ENODATA if the handle has
 * submitted nothing: the file then reads as a plain one. */
static int read_answer(fuse_req_t req, struct ctlfh *fh, size_t size)
{
	size_t len;
	int rc = 0;

	pthread_mutex_lock(&fh->lock);
	if (fh->wlen)
		rc = submit_answer(fh);
	if (rc == 0 && !fh->anslen)
		rc = -ENODATA;
	if (rc < 0) {
		pthread_mutex_unlock(&fh->lock);
		return rc;
	}
	len = fh->anslen - fh->ansoff < size ? fh->anslen - fh->ansoff : size;
	fuse_reply_buf(req, fh->answer + fh->ansoff, len);
	fh->ansoff += len;
	pthread_mutex_unlock(&fh->lock);
	return 0;
}

void ctl_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct ctlfh *fh = fh_of(fi);
	struct read_req *rr;
	int rc;

	if (ino_is_term(ino)) {
		termfile_read(req, size, off, fi);
		return;
	}
	if (fh->handle && (rc = read_answer(req, fh, size)) != -ENODATA) {
		if (rc < 0)
			fuse_reply_err(req, -rc);
		return;
	}
	/* Once answered, the file may be released at once: hold fh until we are done with it. */
	__atomic_add_fetch(&fh->refs, 1, __ATOMIC_RELAXED);
	if (!is_stream(fh->kind) && !is_awaited(fh->kind)) {
		reply_slice(req, fh->snap, fh->snaplen, size, off);
	} else if (!fh->run && fh->kind != K_READY) {
		fuse_reply_buf(req, NULL, 0); /* no command yet: empty */
	} else if (try_read(req, fh, size, off, NULL) < 0) {
		if (fi->flags & O_NONBLOCK) {
			fuse_reply_err(req, EAGAIN);
		} else {
			rr = xmalloc(sizeof(*rr));
			*rr = (struct read_req){fh, size, off};
			park_request(req, read_attempt, rr, read_req_free);
			return; /* the park owns the reference now */
		}
	}
	fh_unref(fh);
}

static int write_cmd(struct ctlfh *fh, const char *buf, size_t size)
{
	int rc = 0;

	if (memchr(buf, '\0', size))
		return -EINVAL;
	pthread_mutex_lock(&fh->lock);
	if (fh->ansoff < fh->anslen) {
		rc = -EBUSY; /* the last run number is still unread */
	} else if (fh->wlen + size > SESSION_CMD_MAX) {
		rc = -EFBIG;
	} else {
		fh->anslen = fh->ansoff = 0; /* the number was read: this is the next command */
		fh->wbuf = xrealloc(fh->wbuf, fh->wlen + size);
		memcpy(fh->wbuf + fh->wlen, buf, size);
		fh->wlen += size;
	}
	pthread_mutex_unlock(&fh->lock);
	return rc;
}

/* Lock held: adds a write to what the open applies at close. */
static int pending_append(struct ctlfh *fh, const char *buf, size_t size, size_t max)
{
	if (memchr(buf, '\0', size))
		return -EINVAL;
	if (fh->wlen + size > max)
		return -EFBIG;
	fh->wbuf = xrealloc(fh->wbuf, fh->wlen + size + 1);
	memcpy(fh->wbuf + fh->wlen, buf, size);
	fh->wlen += size;
	fh->wbuf[fh->wlen] = '\0'; /* so checks may parse it as a string */
	return 0;
}

/* Lines are checked as they complete and all of them are applied at close, or none. */
static int write_env(struct ctlfh *fh, const char *buf, size_t size)
{
	struct envedits ed;
	char *nl = NULL;
	int rc;

	pthread_mutex_lock(&fh->lock);
	rc = pending_append(fh, buf, size, SESSION_CMD_MAX);
	if (rc == 0 && fh->wlen > fh->wchecked)
		nl = memrchr(fh->wbuf + fh->wchecked, '\n', fh->wlen - fh->wchecked);
	if (nl) {
		rc = envedits_parse(fh->wbuf + fh->wchecked, (size_t)(nl - fh->wbuf) - fh->wchecked,
				    &ed);
		if (rc == 0) {
			envedits_append(&fh->wedits, &ed);
			fh->wchecked = (size_t)(nl - fh->wbuf) + 1;
			rc = fh->kind == K_ROOTENV ? rootenv_check(&fh->wedits)
						   : session_env_check(fh->s, &fh->wedits);
		}
	}
	if (rc == 0 && envedit_partial_too_big(fh->wbuf + fh->wchecked, fh->wlen - fh->wchecked,
					       session_env_value_max()))
		rc = -EFBIG;
	pthread_mutex_unlock(&fh->lock);
	return rc;
}

/* Digits, then blanks or a newline: each write is checked, the value is set at close. */
static int write_timeout(struct ctlfh *fh, const char *buf, size_t size)
{
	size_t digits = 0, i;
	int rc;

	pthread_mutex_lock(&fh->lock);
	rc = pending_append(fh, buf, size, 32);
	if (rc == -EFBIG)
		rc = -EINVAL;
	while (rc == 0 && digits < fh->wlen && fh->wbuf[digits] >= '0' && fh->wbuf[digits] <= '9')
		digits++;
	for (i = digits; rc == 0 && i < fh->wlen; i++)
		if (fh->wbuf[i] != ' ' && fh->wbuf[i] != '\n')
			rc = -EINVAL;
	if (rc == 0 && (digits > 10 || (digits == 0 && fh->wlen > 0)))
		rc = -EINVAL;
	if (rc == 0 && digits > 0 && strtoull(fh->wbuf, NULL, 10) > UINT32_MAX)
		rc = -EINVAL;
	pthread_mutex_unlock(&fh->lock);
	return rc;
}

struct cd_req {
	struct ctlfh *fh;
	struct ticket *t;
	size_t size; /* the write's size, or 0 for a close */
};

static void cd_req_free(void *arg)
{
	struct cd_req *cr = arg;

	ticket_unref(cr->t);
	fh_unref(cr->fh);
	free(cr);
}

static int cd_attempt(struct park *p)
{
	struct cd_req *cr = park_arg(p);
	int result;

	if (ticket_wait(cr->t, &result, park_waiter(p)) < 0)
		return -EAGAIN;
	if (result < 0) {
		pthread_mutex_lock(&cr->fh->lock);
		if (!cr->fh->werr)
			cr->fh->werr = result;
		pthread_mutex_unlock(&cr->fh->lock);
	}
	if (result < 0 || !cr->size)
		fuse_reply_err(park_req(p), -result);
	else
		fuse_reply_write(park_req(p), cr->size);
	return 0;
}

/* Lock held: queues the cd of the one path written, *t to learn when the shell did it (NULL if
 * nothing was written). */
static int cwd_submit(struct ctlfh *fh, struct ticket **t)
{
	int rc;

	*t = NULL;
	if (fh->werr || !fh->wlen)
		return fh->werr;
	rc = session_chdir(fh->s, fh->wbuf, fh->wlen, t);
	if (rc < 0)
		*t = NULL;
	free(fh->wbuf);
	fh->wbuf = NULL;
	fh->wlen = 0;
	fh->wdone = true;
	return rc;
}

/* The cd goes when its line is complete, or at close; the write (or close) answers when the
 * shell did it, as it is queued behind running work. Anything after the line is refused. */
static int write_cwd(struct ctlfh *fh, const char *buf, size_t size, struct ticket **t)
{
	const char *nl;
	int rc;

	*t = NULL;
	pthread_mutex_lock(&fh->lock);
	rc = fh->wdone && size ? -EINVAL : pending_append(fh, buf, size, PATH_MAX);
	if (rc == -EFBIG)
		rc = -ENAMETOOLONG;
	nl = rc == 0 ? memchr(fh->wbuf, '\n', fh->wlen) : NULL;
	if (nl && (size_t)(nl - fh->wbuf) + 1 < fh->wlen)
		rc = -EINVAL;
	else if (nl)
		rc = cwd_submit(fh, t);
	pthread_mutex_unlock(&fh->lock);
	return rc;
}

static void park_cd(fuse_req_t req, struct ctlfh *fh, struct ticket *t, size_t size)
{
	struct cd_req *cr = xmalloc(sizeof(*cr));

	__atomic_add_fetch(&fh->refs, 1, __ATOMIC_RELAXED);
	*cr = (struct cd_req){fh, t, size};
	park_request(req, cd_attempt, cr, cd_req_free);
}

static bool is_ctl(enum ctl_kind k)
{
	return k == K_CTL || k == K_JOBSCTL || k == K_ALLJOBSCTL;
}

/* Checks (apply false) or applies one line of a ctl file; an empty line is no verb. */
static int ctl_line(struct ctlfh *fh, const char *line, size_t len, bool apply)
{
	if (!len)
		return 0;
	if (fh->kind != K_CTL)
		return apply ? jobs_kill(fh->s, line, len) : jobs_kill_check(line, len);
	if (fh->job)
		return apply ? job_ctl(fh->job, line, len) : job_ctl_check(line, len);
	return apply ? session_ctl(fh->s, line, len) : session_ctl_check(line, len);
}

/* One verb a line, checked when its newline arrives (a tail longer than any line at once);
 * the open applies them all at close, or none. The size is checked last, so a bad line reads
 * EINVAL however long the write: the buffer holds at most one write past the limit. */
static int write_ctl(struct ctlfh *fh, const char *buf, size_t size)
{
	const char *nl;
	size_t end;
	int rc;

	pthread_mutex_lock(&fh->lock);
	rc = pending_append(fh, buf, size, SIZE_MAX);
	while (rc == 0 && (nl = memchr(fh->wbuf + fh->wchecked, '\n', fh->wlen - fh->wchecked))) {
		end = (size_t)(nl - fh->wbuf);
		rc = ctl_line(fh, fh->wbuf + fh->wchecked, end - fh->wchecked, false);
		if (rc == 0)
			fh->wchecked = end + 1;
	}
	if (rc == 0 && fh->wlen - fh->wchecked >= CTL_LINE_MAX)
		rc = -EINVAL;
	if (rc == 0 && fh->wlen > SESSION_CMD_MAX)
		rc = -EFBIG;
	pthread_mutex_unlock(&fh->lock);
	return rc;
}

/* At close: every line is checked first (the last may lack its newline), so a bad one applies
 * nothing; then they apply in order, and the first that fails (ESRCH: nothing to kill) stops
 * the rest, as what went before cannot be undone. */
static int ctl_apply(struct ctlfh *fh, const char *text, size_t len)
{
	size_t pos, n;
	int pass, rc;

	for (pass = 0; pass < 2; pass++) {
		for (pos = 0; pos < len; pos += n + 1) {
			const char *nl = memchr(text + pos, '\n', len - pos);

			n = nl ? (size_t)(nl - (text + pos)) : len - pos;
			rc = ctl_line(fh, text + pos, n, pass == 1);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

static int write_signal(struct ctlfh *fh, const char *buf, size_t size)
{
	char name[32];
	int sig;

	while (size > 0 && (buf[size - 1] == '\n' || buf[size - 1] == ' '))
		size--;
	if (size == 0 || size >= sizeof(name))
		return -EINVAL;
	memcpy(name, buf, size);
	name[size] = '\0';
	if (signal_parse(name, &sig) < 0)
		return -EINVAL;
	return job_signal(fh->job, sig);
}

/* `yes` or `no`, applied at the write: a process on a pty or on pipes from its next start. */
static int write_tty(struct ctlfh *fh, const char *buf, size_t size)
{
	if (size > 0 && buf[size - 1] == '\n')
		size--;
	if (size == 3 && !memcmp(buf, "yes", 3))
		return job_set_tty(fh->job, true);
	if (size == 2 && !memcmp(buf, "no", 2))
		return job_set_tty(fh->job, false);
	return -EINVAL;
}

/* One request per open (or per read of a handle's number): its line is checked as soon as it is
 * complete, and queued at close. */
static int write_checkout(struct ctlfh *fh, const char *buf, size_t size)
{
	const char *nl;
	int rc;

	pthread_mutex_lock(&fh->lock);
	if (fh->ansoff < fh->anslen) {
		pthread_mutex_unlock(&fh->lock);
		return -EBUSY;
	}
	fh->anslen = fh->ansoff = 0;
	rc = pending_append(fh, buf, size, CHECKOUT_LINE_MAX);
	nl = rc == 0 ? memchr(fh->wbuf, '\n', fh->wlen) : NULL;
	if (nl && (size_t)(nl - fh->wbuf) + 1 < fh->wlen)
		rc = -EINVAL; /* a second line */
	else if (nl && !fh->wchecked)
		rc = session_checkout_check(fh->s, fh->wbuf, fh->wlen);
	if (rc == 0 && nl)
		fh->wchecked = fh->wlen;
	pthread_mutex_unlock(&fh->lock);
	return rc;
}

struct stdin_req {
	struct ctlfh *fh;
	char *data;
	size_t size;
};

static void stdin_req_free(void *arg)
{
	struct stdin_req *sr = arg;

	fh_unref(sr->fh);
	free(sr->data);
	free(sr);
}

static ssize_t stdin_write(struct ctlfh *fh, const char *buf, size_t size, struct waiter *w)
{
	return fh->job ? job_stdin_write(fh->job, buf, size, w)
		       : session_stdin_write(fh->s, buf, size, w);
}

static int stdin_attempt(struct park *p)
{
	struct stdin_req *sr = park_arg(p);
	ssize_t n = stdin_write(sr->fh, sr->data, sr->size, park_waiter(p));

	if (n == -EAGAIN)
		return -EAGAIN;
	if (n < 0)
		fuse_reply_err(park_req(p), (int)-n);
	else
		fuse_reply_write(park_req(p), (size_t)n);
	return 0;
}

/* Bytes go to the running command's stdin or wait for the next; a full buffer parks the
 * writer, as a full pipe would block it. */
static void write_stdin(fuse_req_t req, struct ctlfh *fh, const char *buf, size_t size)
{
	ssize_t n = stdin_write(fh, buf, size, NULL);
	struct stdin_req *sr;

	if (n >= 0) {
		fuse_reply_write(req, (size_t)n);
		return;
	}
	if (n != -EAGAIN) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	sr = xmalloc(sizeof(*sr));
	__atomic_add_fetch(&fh->refs, 1, __ATOMIC_RELAXED);
	*sr = (struct stdin_req){fh, xmemdup(buf, size), size};
	park_request(req, stdin_attempt, sr, stdin_req_free);
}

void ctl_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	       struct fuse_file_info *fi)
{
	struct ctlfh *fh = fh_of(fi);
	struct ticket *t;
	int rc = -EBADF;

	(void)off;
	if (ino_is_term(ino)) {
		termfile_write(req, buf, size, fi);
		return;
	}
	if (fh->kind == K_STDIN) {
		write_stdin(req, fh, buf, size);
		return;
	}
	pthread_mutex_lock(&fh->lock);
	rc = fh->werr;
	pthread_mutex_unlock(&fh->lock);
	if (rc < 0)
		; /* an earlier write failed: the open applies nothing, so takes nothing more */
	else if (fh->kind == K_CMD && fh->job && (rc = job_idle(fh->job)) < 0)
		;
	else if (fh->kind == K_CMD)
		rc = write_cmd(fh, buf, size);
	else if (fh->kind == K_ENV || fh->kind == K_ROOTENV)
		rc = write_env(fh, buf, size);
	else if (fh->kind == K_TIMEOUT)
		rc = write_timeout(fh, buf, size);
	else if (fh->kind == K_SIGNAL)
		rc = write_signal(fh, buf, size);
	else if (fh->kind == K_TTY)
		rc = write_tty(fh, buf, size);
	else if (fh->kind == K_CHECKOUT)
		rc = write_checkout(fh, buf, size);
	else if (is_ctl(fh->kind))
		rc = write_ctl(fh, buf, size);
	else if (fh->kind == K_CWD) {
		rc = write_cwd(fh, buf, size, &t);
		if (rc == 0 && t) {
			park_cd(req, fh, t, size);
			return;
		}
	}
	/* EBUSY refuses a write before it adds anything (a handle's number is unread, a process
	 * runs): what was written before still stands. */
	if (rc < 0 && rc != -EBUSY && fh->kind != K_SIGNAL) {
		pthread_mutex_lock(&fh->lock);
		if (!fh->werr)
			fh->werr = rc;
		pthread_mutex_unlock(&fh->lock);
	}
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, size);
}

/* fh->lock held: submits what was written since the last flush or read, its run number to *n
 * (a command; 0 for an env edit). */
static int submit_pending(struct ctlfh *fh, unsigned *n)
{
	char *text = fh->wbuf;
	size_t len = fh->wlen;
	int rc = 0;

	fh->wbuf = NULL;
	fh->wlen = 0;
	fh->wchecked = 0;
	envedits_free(&fh->wedits);
	*n = 0;
	if (len == 0 || fh->werr) {
		free(text);
		return fh->werr;
	}
	if (fh->kind == K_CMD && fh->job)
		rc = job_start(fh->job, text, len, n);
	else if (fh->kind == K_CMD)
		rc = session_submit(fh->s, text, len, n);
	else if (fh->kind == K_ENV)
		rc = session_setenv(fh->s, text, len);
	else if (fh->kind == K_ROOTENV)
		rc = rootenv_write(text, len);
	else if (fh->kind == K_TIMEOUT)
		rc = session_set_timeout(fh->s, text, len);
	else if (fh->kind == K_CHECKOUT)
		rc = session_checkout(fh->s, text, len, n);
	else if (is_ctl(fh->kind))
		rc = ctl_apply(fh, text, len);
	/* the root env's close says it all, and so does a ctl's (ESRCH is no fault) */
	if (rc < 0 && fh->s && !is_ctl(fh->kind))
		log_warnx("session %s: %s not applied: %s", session_id(fh->s),
			  fh->kind == K_CMD ? "command" : "env edit", strerror(-rc));
	free(text);
	return rc;
}

/* fh->lock held: submits what is pending; a handle keeps the run number for its next read, so
 * a flush (the close of a duplicate, as a shell's `printf ... >&3` does) loses nothing. */
static int submit_answer(struct ctlfh *fh)
{
	unsigned n;
	int rc = submit_pending(fh, &n);

	if (rc == 0 && n && fh->handle) {
		fh->anslen = (size_t)snprintf(fh->answer, sizeof(fh->answer), "%u\n", n);
		fh->ansoff = 0;
	}
	return rc;
}

/* The shell sees a command when its writer closes the file (close sends FLUSH and waits for it;
 * RELEASE comes asynchronously), or when a handle reads its number. */
static int flush_pending(struct ctlfh *fh)
{
	int rc;

	pthread_mutex_lock(&fh->lock);
	rc = submit_answer(fh);
	pthread_mutex_unlock(&fh->lock);
	return rc;
}

void ctl_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ctlfh *fh = fh_of(fi);
	struct ticket *t;
	int rc;

	if (ino_is_term(ino)) {
		termfile_flush(req, fi);
		return;
	}
	if (fh->kind == K_CWD) {
		/* a path without its newline goes at close, which answers when the shell did it */
		pthread_mutex_lock(&fh->lock);
		rc = cwd_submit(fh, &t);
		pthread_mutex_unlock(&fh->lock);
		if (t) {
			park_cd(req, fh, t, 0);
			return;
		}
		fuse_reply_err(req, -rc);
		return;
	}
	fuse_reply_err(req, -flush_pending(fh));
}

void ctl_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ctlfh *fh = fh_of(fi);

	if (ino_is_term(ino)) {
		termfile_release(req, fi);
		return;
	}
	flush_pending(fh);
	/* A poll waiter still queued holds a reference; drop it if we can take it back. */
	if (fh->poll_armed && waiter_cancel(&fh->pollw))
		fh_unref(fh);
	fh_unref(fh);
	fuse_reply_err(req, 0);
}

static void poll_woken(struct waiter *w)
{
	struct ctlfh *fh = container_of(w, struct ctlfh, pollw);
	struct fuse_pollhandle *ph;

	pthread_mutex_lock(&fh->lock);
	ph = fh->ph;
	fh->ph = NULL;
	fh->poll_armed = false;
	pthread_mutex_unlock(&fh->lock);
	if (ph) {
		fuse_lowlevel_notify_poll(ph);
		fuse_pollhandle_destroy(ph);
	}
	fh_unref(fh);
}

/* True if a read would not block; else, with w, w is queued to learn when it would. */
static bool poll_ready(struct ctlfh *fh, struct waiter *w)
{
	int status;

	if (fh->kind == K_EXIT || fh->kind == K_RESULT)
		return run_wait_exit(fh->run, &status, w) == 0;
	return run_poll(fh->run, stream_of(fh->kind), fh->pos, w);
}

void ctl_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
	      struct fuse_pollhandle *ph)
{
	struct ctlfh *fh = fh_of(fi);
	unsigned revents = POLLIN | POLLRDNORM;
	struct waiter *w = NULL;
	bool ready;

	if (ino_is_term(ino)) {
		termfile_poll(req, fi, ph);
		return;
	}
	if (fh->writable)
		revents |= POLLOUT | POLLWRNORM;
	if (!fh->run || (!is_stream(fh->kind) && fh->kind != K_EXIT && fh->kind != K_RESULT)) {
		if (ph)
			fuse_pollhandle_destroy(ph);
		fuse_reply_poll(req, revents);
		return;
	}
	pthread_mutex_lock(&fh->lock);
	if (ph) {
		if (fh->ph)
			fuse_pollhandle_destroy(fh->ph);
		fh->ph = ph;
		if (!fh->poll_armed) {
			/* The queued waiter holds a reference until it is woken or cancelled. */
			fh->poll_armed = true;
			fh->pollw.wake = poll_woken;
			__atomic_add_fetch(&fh->refs, 1, __ATOMIC_RELAXED);
			w = &fh->pollw;
		}
	}
	ready = poll_ready(fh, w);
	if (ready && w) {
		fh->poll_armed = false;
		__atomic_sub_fetch(&fh->refs, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&fh->lock);
	fuse_reply_poll(req, ready ? revents : 0);
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
		pthread_mutex_lock(&fh->lock);
		st->st_size = (off_t)fh->snaplen; /* 0 until the first read rendered it */
		pthread_mutex_unlock(&fh->lock);
		return 0;
	}
	return -ENOENT;
}
