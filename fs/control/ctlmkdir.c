/* The control tree's mkdir and rmdir, where a directory's row allows them: sessions (answered
 * once their shell is up or gone) and background processes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctlkind.h"
#include "job.h"
#include "park.h"
#include "refusals.h"
#include "session.h"
#include "xmalloc.h"

void ctl_mkdir_job(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct session *s;
	struct job *j;
	int rc;

	if (strcmp(name, "ctl") == 0) {
		fuse_reply_err(req, EEXIST); /* procs/ctl is a file */
		return;
	}
	s = ctl_session(parent);
	rc = s ? job_create(s, name) : -ENOENT;
	j = rc == 0 ? job_find(s, name) : NULL;
	if (j) {
		reply_entry(req, job_ino(ino_serial(parent), K_JOBDIR, job_id(j)));
		job_unref(j);
	} else {
		fuse_reply_err(req, rc < 0 ? -rc : ENOENT);
	}
	if (s)
		session_unref(s);
}

struct mkdir_req {
	struct ticket *ready;
	fuse_ino_t ino;
};

static void mkdir_req_free(void *arg)
{
	struct mkdir_req *mr = arg;

	ticket_unref(mr->ready);
	free(mr);
}

static int mkdir_attempt(struct park *p)
{
	struct mkdir_req *mr = park_arg(p);
	int result;

	if (ticket_wait(mr->ready, &result, park_waiter(p)) < 0)
		return -EAGAIN;
	if (result < 0)
		fuse_reply_err(park_req(p), -result);
	else
		reply_entry(park_req(p), mr->ino);
	return 0;
}

void ctl_mkdir_session(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mkdir_req *mr;
	struct ticket *ready;
	struct session *s;
	int rc;

	(void)parent;
	rc = session_create(name, &s, &ready);
	if (rc == -EINVAL) {
		char *path = xasprintf("sessions/%s", name);

		refusal_note(path, EINVAL, "a session id is 1 to 64 of A-Z a-z 0-9 . _ -, not . or ..");
		free(path);
	}
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	/* Answer once its shell is up: a shell the launcher cannot start fails the mkdir. */
	mr = xmalloc(sizeof(*mr));
	*mr = (struct mkdir_req){ready, ctl_ino(session_serial(s), K_SDIR, 0)};
	session_unref(s);
	park_request(req, mkdir_attempt, mr, mkdir_req_free);
}

void ctl_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	const struct kind_info *k = kind_row(ino_kind(parent));

	(void)mode;
	if (k->mkdir)
		k->mkdir(req, parent, name);
	else
		fuse_reply_err(req, EPERM);
}

static int rmdir_attempt(struct park *p)
{
	int result;

	if (ticket_wait(park_arg(p), &result, park_waiter(p)) < 0)
		return -EAGAIN;
	fuse_reply_err(park_req(p), 0);
	return 0;
}

static void ticket_release(void *t)
{
	ticket_unref(t);
}

void ctl_rmdir_job(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct session *s = ctl_session(parent);
	int rc = strcmp(name, "ctl") == 0 ? -ENOTDIR : s ? job_remove(s, name) : -ENOENT;

	fuse_reply_err(req, -rc);
	if (s)
		session_unref(s);
}

void ctl_rmdir_session(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct ticket *gone;
	int rc;

	(void)parent;
	if (strcmp(name, "clone") == 0) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	rc = session_remove(name, &gone);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	/* Answer once the shell is gone, so `rmdir s && pgrep ...` finds nothing. */
	park_request(req, rmdir_attempt, gone, ticket_release);
}

void ctl_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	const struct kind_info *k = kind_row(ino_kind(parent));

	if (k->rmdir)
		k->rmdir(req, parent, name);
	else
		fuse_reply_err(req, EPERM);
}
