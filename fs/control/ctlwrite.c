/* Writes to control files: each write checked at once so tools see the errno, buffered and
 * applied at close (cmd, env, timeout, cwd, ctl, checkout), all of it or nothing; signal
 * and tty apply at the write, stdin passes through. */
#include <errno.h>
#include <limits.h>
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
#include "log.h"
#include "park.h"
#include "rootenv.h"
#include "run.h"
#include "session.h"
#include "signame.h"
#include "xmalloc.h"

#define CHECKOUT_LINE_MAX 65536 /* far above any URL and options */
/* ctl_line_split's limit: a ctl line without its newline can be no longer */
#define CTL_LINE_MAX sizeof(((struct ctl_line *)NULL)->buf)

static int write_cmd(struct ctlfh *fh, const char *buf, size_t size)
{
	int rc = 0;

	if (memchr(buf, '\0', size))
		return -EINVAL;
	pthread_mutex_lock(&fh->h.lock);
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
	pthread_mutex_unlock(&fh->h.lock);
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

	pthread_mutex_lock(&fh->h.lock);
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
	pthread_mutex_unlock(&fh->h.lock);
	return rc;
}

/* Digits, then blanks or a newline: each write is checked, the value is set at close. */
static int write_timeout(struct ctlfh *fh, const char *buf, size_t size)
{
	size_t digits = 0, i;
	int rc;

	pthread_mutex_lock(&fh->h.lock);
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
	pthread_mutex_unlock(&fh->h.lock);
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
	fhandle_unref(&cr->fh->h);
	free(cr);
}

static int cd_attempt(struct park *p)
{
	struct cd_req *cr = park_arg(p);
	int result;

	if (ticket_wait(cr->t, &result, park_waiter(p)) < 0)
		return -EAGAIN;
	if (result < 0) {
		pthread_mutex_lock(&cr->fh->h.lock);
		if (!cr->fh->werr)
			cr->fh->werr = result;
		pthread_mutex_unlock(&cr->fh->h.lock);
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
	pthread_mutex_lock(&fh->h.lock);
	rc = fh->wdone && size ? -EINVAL : pending_append(fh, buf, size, PATH_MAX);
	if (rc == -EFBIG)
		rc = -ENAMETOOLONG;
	nl = rc == 0 ? memchr(fh->wbuf, '\n', fh->wlen) : NULL;
	if (nl && (size_t)(nl - fh->wbuf) + 1 < fh->wlen)
		rc = -EINVAL;
	else if (nl)
		rc = cwd_submit(fh, t);
	pthread_mutex_unlock(&fh->h.lock);
	return rc;
}

static void park_cd(fuse_req_t req, struct ctlfh *fh, struct ticket *t, size_t size)
{
	struct cd_req *cr = xmalloc(sizeof(*cr));

	fhandle_ref(&fh->h);
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

	pthread_mutex_lock(&fh->h.lock);
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
	pthread_mutex_unlock(&fh->h.lock);
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

	pthread_mutex_lock(&fh->h.lock);
	if (fh->ansoff < fh->anslen) {
		pthread_mutex_unlock(&fh->h.lock);
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
	pthread_mutex_unlock(&fh->h.lock);
	return rc;
}

/* Bytes go to the running command's stdin or wait for the next; a full buffer parks the
 * writer, as a full pipe would block it (even with O_NONBLOCK). */
static ssize_t stdin_write(struct fhandle *h, const char *buf, size_t size, struct waiter *w)
{
	struct ctlfh *fh = container_of(h, struct ctlfh, h);

	return fh->job ? job_stdin_write(fh->job, buf, size, w)
		       : session_stdin_write(fh->s, buf, size, w);
}

void ctl_write(fuse_req_t req, const char *buf, size_t size, struct fuse_file_info *fi)
{
	struct ctlfh *fh = fh_of(fi);
	struct ticket *t;
	int rc = -EBADF;

	if (fh->kind == K_STDIN) {
		fhandle_write(req, &fh->h, buf, size, 0, stdin_write);
		return;
	}
	pthread_mutex_lock(&fh->h.lock);
	rc = fh->werr;
	pthread_mutex_unlock(&fh->h.lock);
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
		pthread_mutex_lock(&fh->h.lock);
		if (!fh->werr)
			fh->werr = rc;
		pthread_mutex_unlock(&fh->h.lock);
	}
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, size);
}

/* fh->h.lock held: submits what was written since the last flush or read, its run number to *n
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

/* fh->h.lock held: submits what is pending; a handle keeps the run number for its next read, so
 * a flush (the close of a duplicate, as a shell's `printf ... >&3` does) loses nothing. */
int submit_answer(struct ctlfh *fh)
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
int flush_pending(struct ctlfh *fh)
{
	int rc;

	pthread_mutex_lock(&fh->h.lock);
	rc = submit_answer(fh);
	pthread_mutex_unlock(&fh->h.lock);
	return rc;
}

void ctl_flush(fuse_req_t req, struct fuse_file_info *fi)
{
	struct ctlfh *fh = fh_of(fi);
	struct ticket *t;
	int rc;

	if (fh->kind == K_CWD) {
		/* a path without its newline goes at close, which answers when the shell did it */
		pthread_mutex_lock(&fh->h.lock);
		rc = cwd_submit(fh, &t);
		pthread_mutex_unlock(&fh->h.lock);
		if (t) {
			park_cd(req, fh, t, 0);
			return;
		}
		fuse_reply_err(req, -rc);
		return;
	}
	fuse_reply_err(req, -flush_pending(fh));
}
