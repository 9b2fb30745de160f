/* Writes to control files: each write checked at once so tools see the errno, buffered and
 * applied at close (cmd, env, timeout, cwd, checkout), all of it or nothing; stdin passes
 * through. The kind's row says which check and which apply; files of verbs are ctlverb.c's. */
#include <errno.h>
#include <limits.h>
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
#include "log.h"
#include "park.h"
#include "rootenv.h"
#include "session.h"
#include "xmalloc.h"

#define CHECKOUT_LINE_MAX 65536 /* far above any URL and options */

int ctl_write_cmd(fuse_req_t req, struct ctlfh *fh, const char *buf, size_t size)
{
	int rc = 0;

	(void)req;
	if (fh->job && (rc = job_idle(fh->job)) < 0)
		return rc;
	if (memchr(buf, '\0', size))
		return -EINVAL;
	pthread_mutex_lock(&fh->h.lock);
	if (runhandle_unread(&fh->rh)) {
		rc = -EBUSY; /* the last run number is still unread */
	} else if (fh->wlen + size > SESSION_CMD_MAX) {
		rc = -EFBIG;
	} else {
		runhandle_clear(&fh->rh); /* the number was read: this is the next command */
		fh->wbuf = xrealloc(fh->wbuf, fh->wlen + size);
		memcpy(fh->wbuf + fh->wlen, buf, size);
		fh->wlen += size;
	}
	pthread_mutex_unlock(&fh->h.lock);
	return rc;
}

int ctl_write_checked_lines(struct ctlfh *fh, const char *buf, size_t size, size_t max,
			    int (*check)(const char *line, size_t len, char *why, size_t whylen))
{
	char why[160] = "", line_why[200];
	unsigned nline = 0;
	int rc;

	pthread_mutex_lock(&fh->h.lock);
	rc = ctl_pending_append(fh, buf, size, max);
	while (rc == 0 && fh->wchecked < fh->wlen) {
		const char *line = fh->wbuf + fh->wchecked;
		const char *nl = memchr(line, '\n', fh->wlen - fh->wchecked);

		if (!nl)
			break;
		nline = 1;
		for (const char *p = fh->wbuf; p < line; p++)
			nline += *p == '\n';
		rc = check(line, (size_t)(nl - line), why, sizeof(why));
		fh->wchecked = (size_t)(nl - fh->wbuf) + 1;
	}
	pthread_mutex_unlock(&fh->h.lock);
	if (rc < 0 && why[0]) {
		snprintf(line_why, sizeof(line_why), "line %u: %s", nline, why);
		ctl_refuse(fh, -rc, line_why);
	}
	return rc;
}

int ctl_pending_append(struct ctlfh *fh, const char *buf, size_t size, size_t max)
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

/* Lines are checked as they complete, against the env they would make (check), and all of them
 * are applied at close, or none. */
static int write_env(struct ctlfh *fh, const char *buf, size_t size, int (*check)(struct ctlfh *fh))
{
	struct envedits ed;
	char *nl = NULL;
	int rc;

	pthread_mutex_lock(&fh->h.lock);
	rc = ctl_pending_append(fh, buf, size, SESSION_CMD_MAX);
	if (rc == 0 && fh->wlen > fh->wchecked)
		nl = memrchr(fh->wbuf + fh->wchecked, '\n', fh->wlen - fh->wchecked);
	if (nl) {
		rc = envedits_parse(fh->wbuf + fh->wchecked, (size_t)(nl - fh->wbuf) - fh->wchecked,
				    &ed);
		if (rc == -EINVAL)
			ctl_refuse(fh, EINVAL, ENVEDIT_FORM);
		if (rc == 0) {
			envedits_append(&fh->wedits, &ed);
			fh->wchecked = (size_t)(nl - fh->wbuf) + 1;
			rc = check(fh);
		}
	}
	if (rc == 0 && envedit_partial_too_big(fh->wbuf + fh->wchecked, fh->wlen - fh->wchecked,
					       session_env_value_max()))
		rc = -EFBIG;
	pthread_mutex_unlock(&fh->h.lock);
	return rc;
}

static int check_session_env(struct ctlfh *fh)
{
	return session_env_check(fh->s, &fh->wedits);
}

static int check_rootenv(struct ctlfh *fh)
{
	return rootenv_check(&fh->wedits);
}

int ctl_write_env(fuse_req_t req, struct ctlfh *fh, const char *buf, size_t size)
{
	(void)req;
	return write_env(fh, buf, size, check_session_env);
}

int ctl_write_rootenv(fuse_req_t req, struct ctlfh *fh, const char *buf, size_t size)
{
	(void)req;
	return write_env(fh, buf, size, check_rootenv);
}

/* Digits, then blanks or a newline: each write is checked, the value is set at close. */
int ctl_write_timeout(fuse_req_t req, struct ctlfh *fh, const char *buf, size_t size)
{
	size_t digits = 0, i;
	int rc;

	(void)req;
	pthread_mutex_lock(&fh->h.lock);
	rc = ctl_pending_append(fh, buf, size, 32);
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
	if (rc == -EINVAL)
		ctl_refuse(fh, EINVAL, "a timeout is a number of milliseconds, 0 to 4294967295");
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

static void park_cd(fuse_req_t req, struct ctlfh *fh, struct ticket *t, size_t size)
{
	struct cd_req *cr = xmalloc(sizeof(*cr));

	fhandle_ref(&fh->h);
	*cr = (struct cd_req){fh, t, size};
	park_request(req, cd_attempt, cr, cd_req_free);
}

/* The cd goes when its line is complete, or at close; the write (or close) answers when the
 * shell did it, as it is queued behind running work. Anything after the line is refused. */
int ctl_write_cwd(fuse_req_t req, struct ctlfh *fh, const char *buf, size_t size)
{
	struct ticket *t = NULL;
	const char *nl;
	int rc;

	pthread_mutex_lock(&fh->h.lock);
	rc = fh->wdone && size ? -EINVAL : ctl_pending_append(fh, buf, size, PATH_MAX);
	if (rc == -EFBIG)
		rc = -ENAMETOOLONG;
	nl = rc == 0 ? memchr(fh->wbuf, '\n', fh->wlen) : NULL;
	if (nl && (size_t)(nl - fh->wbuf) + 1 < fh->wlen)
		rc = -EINVAL;
	else if (nl)
		rc = cwd_submit(fh, &t);
	pthread_mutex_unlock(&fh->h.lock);
	if (rc == 0 && t) {
		park_cd(req, fh, t, size);
		return CTL_REPLIED;
	}
	return rc;
}

/* A path without its newline goes at close, which answers when the shell did it. */
void ctl_flush_cwd(fuse_req_t req, struct ctlfh *fh)
{
	struct ticket *t;
	int rc;

	pthread_mutex_lock(&fh->h.lock);
	rc = cwd_submit(fh, &t);
	pthread_mutex_unlock(&fh->h.lock);
	if (t)
		park_cd(req, fh, t, 0);
	else
		fuse_reply_err(req, -rc);
}

/* One request per open (or per read of a handle's number): its line is checked as soon as it is
 * complete, and queued at close. */
int ctl_write_checkout(fuse_req_t req, struct ctlfh *fh, const char *buf, size_t size)
{
	const char *nl;
	int rc;

	(void)req;
	pthread_mutex_lock(&fh->h.lock);
	if (runhandle_unread(&fh->rh)) {
		pthread_mutex_unlock(&fh->h.lock);
		return -EBUSY;
	}
	runhandle_clear(&fh->rh);
	rc = ctl_pending_append(fh, buf, size, CHECKOUT_LINE_MAX);
	nl = rc == 0 ? memchr(fh->wbuf, '\n', fh->wlen) : NULL;
	if (nl && (size_t)(nl - fh->wbuf) + 1 < fh->wlen)
		rc = -EINVAL; /* a second line */
	else if (nl && !fh->wchecked)
		rc = session_checkout_check(fh->s, fh->wbuf, fh->wlen);
	if (rc == 0 && nl)
		fh->wchecked = fh->wlen;
	pthread_mutex_unlock(&fh->h.lock);
	if (rc == -EINVAL)
		ctl_refuse(fh, EINVAL,
			   "one line, URL [branch=NAME] [dir=PATH] [depth=N], the PATH inside the "
			   "workspace");
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

int ctl_write_stdin(fuse_req_t req, struct ctlfh *fh, const char *buf, size_t size)
{
	fhandle_write(req, &fh->h, buf, size, 0, stdin_write);
	return CTL_REPLIED;
}

void ctl_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	       struct fuse_file_info *fi)
{
	struct ctlfh *fh = fh_of(fi);
	const struct kind_info *k = fh_row(fh);
	int rc;

	(void)ino;
	(void)off;
	pthread_mutex_lock(&fh->h.lock);
	rc = fh->werr;
	pthread_mutex_unlock(&fh->h.lock);
	/* An earlier write failed: the open applies nothing, so takes nothing more. */
	if (rc == 0)
		rc = k->write ? k->write(req, fh, buf, size) : -EBADF;
	if (rc == CTL_REPLIED)
		return;
	/* EBUSY refuses a write before it adds anything (a handle's number is unread, a process
	 * runs): what was written before still stands. */
	if (rc < 0 && rc != -EBUSY && !(k->flags & KF_EACH_WRITE)) {
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

int ctl_apply_cmd(struct ctlfh *fh, const char *text, size_t len, unsigned *n)
{
	return fh->job ? job_start(fh->job, text, len, n) : session_submit(fh->s, text, len, n);
}

int ctl_apply_env(struct ctlfh *fh, const char *text, size_t len, unsigned *n)
{
	(void)n;
	return session_setenv(fh->s, text, len);
}

int ctl_apply_rootenv(struct ctlfh *fh, const char *text, size_t len, unsigned *n)
{
	(void)fh;
	(void)n;
	return rootenv_write(text, len);
}

int ctl_apply_timeout(struct ctlfh *fh, const char *text, size_t len, unsigned *n)
{
	(void)n;
	return session_set_timeout(fh->s, text, len);
}

int ctl_apply_checkout(struct ctlfh *fh, const char *text, size_t len, unsigned *n)
{
	return session_checkout(fh->s, text, len, n);
}

/* fh->h.lock held: submits what was written since the last flush or read, its run number to *n
 * (a command's, a checkout's; else 0). */
static int submit_pending(struct ctlfh *fh, unsigned *n)
{
	const struct kind_info *k = fh_row(fh);
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
	if (k->apply)
		rc = k->apply(fh, text, len, n);
	/* the root env's close says it all, and so does a file of verbs' (ESRCH is no fault) */
	if (rc < 0 && fh->s && !k->verb)
		log_warnx("session %s: %s not applied: %s", session_id(fh->s), k->name,
			  strerror(-rc));
	free(text);
	return rc;
}

/* fh->h.lock held: submits what is pending; a handle keeps the run number for its next read, so
 * a flush (the close of a duplicate, as a shell's `printf ... >&3` does) loses nothing. */
int submit_answer(struct ctlfh *fh)
{
	unsigned n;
	int rc = submit_pending(fh, &n);

	if (rc == 0)
		runhandle_set(&fh->rh, n);
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

void ctl_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ctlfh *fh = fh_of(fi);
	const struct kind_info *k = fh_row(fh);

	(void)ino;
	if (k->flush)
		k->flush(req, fh);
	else
		fuse_reply_err(req, -flush_pending(fh));
}
