/* Files of verbs: a session's or a process's ctl and procs/ctl, one verb a line, each checked
 * when its newline arrives and all applied at close, or none; signal and tty, applied at the
 * write itself. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ctl.h"
#include "ctlfile_priv.h"
#include "job.h"
#include "session.h"
#include "signame.h"
#include "verb.h"
#include "xmalloc.h"

/* A session's ctl, or a process's. */
static int ctl_verb_ctl(struct ctlfh *fh, const char *line, size_t len, bool apply)
{
	if (fh->job)
		return job_ctl(apply ? fh->job : NULL, line, len);
	return session_ctl(apply ? fh->s : NULL, line, len);
}

/* procs/ctl: the session's background processes, or (the root's) every one. */
static int ctl_verb_kill(struct ctlfh *fh, const char *line, size_t len, bool apply)
{
	return jobs_ctl(fh->s, line, len, apply);
}

/* An empty line is no verb. */
static int verb(struct ctlfh *fh, const char *line, size_t len, bool apply)
{
	return len ? fh_row(fh)->verb(fh, line, len, apply) : 0;
}

/* The size is checked last, so a bad line reads EINVAL however long the write: the buffer
 * holds at most one write past the limit. A tail longer than any line fails at once. */
static int ctl_write_verbs(fuse_req_t req, struct ctlfh *fh, const char *buf, size_t size)
{
	const char *nl;
	size_t end;
	int rc;

	(void)req;
	pthread_mutex_lock(&fh->h.lock);
	rc = ctl_pending_append(fh, buf, size, SIZE_MAX);
	while (rc == 0 && (nl = memchr(fh->wbuf + fh->wchecked, '\n', fh->wlen - fh->wchecked))) {
		end = (size_t)(nl - fh->wbuf);
		rc = verb(fh, fh->wbuf + fh->wchecked, end - fh->wchecked, false);
		if (rc == 0)
			fh->wchecked = end + 1;
		else if (rc == -EINVAL)
			ctl_refuse(fh, EINVAL, verb_why());
	}
	if (rc == 0 && fh->wlen - fh->wchecked >= VERB_LINE_MAX) {
		rc = -EINVAL;
		ctl_refuse(fh, EINVAL, "a line longer than any verb's");
	}
	if (rc == 0 && fh->wlen > SESSION_CMD_MAX)
		rc = -EFBIG;
	pthread_mutex_unlock(&fh->h.lock);
	return rc;
}

/* At close: every line is checked first (the last may lack its newline), so a bad one applies
 * nothing; then they apply in order, and the first that fails (ESRCH: nothing to kill) stops
 * the rest, as what went before cannot be undone. */
static int ctl_apply_verbs(struct ctlfh *fh, const char *text, size_t len, unsigned *n)
{
	size_t pos, linelen;
	int pass, rc;

	(void)n;
	for (pass = 0; pass < 2; pass++) {
		for (pos = 0; pos < len; pos += linelen + 1) {
			const char *nl = memchr(text + pos, '\n', len - pos);

			linelen = nl ? (size_t)(nl - (text + pos)) : len - pos;
			rc = verb(fh, text + pos, linelen, pass == 1);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

static int ctl_write_signal(fuse_req_t req, struct ctlfh *fh, const char *buf, size_t size)
{
	char name[32];
	int sig;

	(void)req;
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
static int ctl_write_tty(fuse_req_t req, struct ctlfh *fh, const char *buf, size_t size)
{
	(void)req;
	if (size > 0 && buf[size - 1] == '\n')
		size--;
	if (size == 3 && !memcmp(buf, "yes", 3))
		return job_set_tty(fh->job, true);
	if (size == 2 && !memcmp(buf, "no", 2))
		return job_set_tty(fh->job, false);
	return -EINVAL;
}

static char *ctl_render_tty(struct ctlfh *fh, size_t *len)
{
	char *text = xstrdup(job_tty(fh->job) ? "yes\n" : "no\n");

	*len = strlen(text);
	return text;
}

/* The rows of the kinds this file serves (ctlkind.h). */

/* the session's, or a background process's */
const struct kind_info ctl_row = {
    .name = "ctl",
    .help = "write kill|killall [SIGNAL], timeout MS, restart (a process's: kill, timeout)",
    .mode = S_IFREG | 0200,
    .where = IN_SESSION | IN_JOB,
    .write = ctl_write_verbs,
    .verb = ctl_verb_ctl,
    .apply = ctl_apply_verbs,
};

/* procs/ctl of a session */
const struct kind_info jobsctl_row = {
    .name = "ctl",
    .path = "sessions/ID/procs/ctl",
    .help = "write: kill [SIGNAL] ends the session's background processes",
    .mode = S_IFREG | 0200,
    .write = ctl_write_verbs,
    .verb = ctl_verb_kill,
    .apply = ctl_apply_verbs,
};

const struct kind_info alljobsctl_row = {
    .name = "ctl",
    .path = "procs/ctl",
    .help = "write: kill [SIGNAL] ends every background process",
    .mode = S_IFREG | 0200,
    .flags = KF_ROOT,
    .write = ctl_write_verbs,
    .verb = ctl_verb_kill,
    .apply = ctl_apply_verbs,
};

const struct kind_info signal_row = {
    .name = "signal",
    .help = "write a signal (TERM, 15): sent to its whole tree",
    .mode = S_IFREG | 0200,
    .where = IN_JOB,
    .flags = KF_EACH_WRITE,
    .write = ctl_write_signal,
};

const struct kind_info tty_row = {
    .name = "tty",
    .help = "yes or no: whether it starts on a pty; write it while it does not run",
    .mode = S_IFREG | 0644,
    .where = IN_JOB,
    .render = ctl_render_tty,
    .write = ctl_write_tty,
};
