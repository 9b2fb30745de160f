/* The control tree's names: lookup, and directory listings (opendir, readdir, readdirplus,
 * releasedir) built from the table of files in ctltree.c and the core's sessions. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl.h"
#include "ctxfs.h"
#include "ctltree_priv.h"
#include "job.h"
#include "run.h"
#include "session.h"
#include "term.h"
#include "workspace.h"
#include "xmalloc.h"

/* Names at the root and in sessions/ never change: let the kernel keep them. */
#define FIXED_TIMEOUT 3600.0

/* How long the kernel may keep a name. A session's directory goes only by rmdir, which drops
 * the kernel's entry itself, so it is kept: a path walk to a session's file then costs no
 * LOOKUP. Runs, processes and terminals also go on their own (history, exit): 0. */
double ctl_entry_timeout(enum ctl_kind k)
{
	return k == K_RUNDIR || k == K_JOBDIR || k == K_JOBLINK || k == K_TERMDIR ? 0
										   : FIXED_TIMEOUT;
}

/* Builds an inode of the same owner (session, run or background process) as ino. */
static fuse_ino_t sibling(fuse_ino_t ino, enum ctl_kind k)
{
	return ino_job(ino) ? job_ino(ino_serial(ino), k, ino_job(ino))
			    : ctl_ino(ino_serial(ino), k, ino_run(ino));
}

static void lookup_root(fuse_req_t req, const char *name)
{
	struct fuse_entry_param e = {0};
	int rc;

	if (strcmp(name, "README") == 0) {
		reply_entry(req, ctl_ino(0, K_README, 0), FIXED_TIMEOUT);
	} else if (strcmp(name, "limits") == 0) {
		reply_entry(req, ctl_ino(0, K_LIMITS, 0), FIXED_TIMEOUT);
	} else if (strcmp(name, "env") == 0) {
		reply_entry(req, ctl_ino(0, K_ROOTENV, 0), FIXED_TIMEOUT);
	} else if (strcmp(name, "sessions") == 0) {
		reply_entry(req, ctl_ino(0, K_SESSIONS, 0), FIXED_TIMEOUT);
	} else if (strcmp(name, "procs") == 0) {
		reply_entry(req, ctl_ino(0, K_ALLJOBS, 0), FIXED_TIMEOUT);
	} else if (strcmp(name, "contexts") == 0) {
		ctxfs_root_entry(req);
	} else if (strcmp(name, "workspace") == 0) {
		rc = ws_root_entry(&e);
		if (rc < 0)
			fuse_reply_err(req, -rc);
		else
			fuse_reply_entry(req, &e);
	} else {
		fuse_reply_err(req, ENOENT);
	}
}

static void lookup_sessions(fuse_req_t req, const char *name)
{
	struct session *s;

	if (strcmp(name, "clone") == 0) {
		reply_entry(req, ctl_ino(0, K_CLONE, 0), FIXED_TIMEOUT);
		return;
	}
	s = session_find(name);
	if (!s) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	reply_entry(req, ctl_ino(session_serial(s), K_SDIR, 0), ctl_entry_timeout(K_SDIR));
	session_unref(s);
}

static void lookup_file(fuse_req_t req, fuse_ino_t parent, const char *name, int where)
{
	for (int k = K_RUNS; k < K_MAX; k++) {
		if ((kinds[k].where & where) && strcmp(name, kinds[k].name) == 0) {
			reply_entry(req, sibling(parent, k), FIXED_TIMEOUT);
			return;
		}
	}
	fuse_reply_err(req, ENOENT);
}

static void lookup_term(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct session *s = ctl_session(parent);
	struct term *t = s ? term_find(s, name) : NULL;

	if (!t) {
		fuse_reply_err(req, ENOENT);
	} else {
		/* Timeout 0: a name removed and made again is a new terminal. */
		reply_entry(req, job_ino(ino_serial(parent), K_TERMDIR, term_id(t)), 0);
		term_unref(t);
	}
	if (s)
		session_unref(s);
}

static void lookup_job(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct session *s;
	struct job *j;

	if (strcmp(name, "ctl") == 0) {
		reply_entry(req, ctl_ino(ino_serial(parent), K_JOBSCTL, 0), FIXED_TIMEOUT);
		return;
	}
	s = ctl_session(parent);
	j = s ? job_find(s, name) : NULL;
	if (!j) {
		fuse_reply_err(req, ENOENT);
	} else {
		/* Timeout 0: a name removed and made again is a new process. */
		reply_entry(req, job_ino(ino_serial(parent), K_JOBDIR, job_id(j)), 0);
		job_unref(j);
	}
	if (s)
		session_unref(s);
}

/* "SESSION:NAME": names never hold a colon, so the first one splits them, and no two processes
 * share a link's name (with a dot, session a.b's process c and session a's b.c would). */
static void lookup_joblink(fuse_req_t req, const char *name)
{
	const char *colon = strchr(name, ':');
	struct session *s;
	struct job *j = NULL;
	char *sid;

	if (strcmp(name, "ctl") == 0) {
		reply_entry(req, ctl_ino(0, K_ALLJOBSCTL, 0), FIXED_TIMEOUT);
		return;
	}
	if (!colon) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	sid = xstrndup(name, (size_t)(colon - name));
	s = session_find(sid);
	free(sid);
	if (s)
		j = job_find(s, colon + 1);
	if (j)
		reply_entry(req, job_ino(session_serial(s), K_JOBLINK, job_id(j)), 0);
	else
		fuse_reply_err(req, ENOENT);
	if (j)
		job_unref(j);
	if (s)
		session_unref(s);
}

static void lookup_run(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	char *end;
	unsigned long n = strtoul(name, &end, 10);

	if (*end || end == name || name[0] == '0' || n > RUN_MAX) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	/* Timeout 0: the run may leave the history at any time. */
	reply_entry(req, ctl_ino(ino_serial(parent), K_RUNDIR, (unsigned)n), 0);
}

void ctl_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	switch (ino_kind(parent)) {
	case K_ROOT:
		lookup_root(req, name);
		break;
	case K_SESSIONS:
		lookup_sessions(req, name);
		break;
	case K_SDIR:
		lookup_file(req, parent, name, IN_SESSION);
		break;
	case K_RUNS:
		lookup_run(req, parent, name);
		break;
	case K_RUNDIR:
		lookup_file(req, parent, name, IN_RUN);
		break;
	case K_JOBS:
		lookup_job(req, parent, name);
		break;
	case K_JOBDIR:
		lookup_file(req, parent, name, IN_JOB);
		break;
	case K_ALLJOBS:
		lookup_joblink(req, name);
		break;
	case K_TERMS:
		lookup_term(req, parent, name);
		break;
	case K_TERMDIR:
		lookup_file(req, parent, name, IN_TERM);
		break;
	default:
		fuse_reply_err(req, ENOTDIR);
	}
}

/* Directory listings are built at opendir and served by index. */
struct dirent_snap {
	char *name;
	fuse_ino_t ino;
	mode_t mode;
};

struct dir_snap {
	struct dirent_snap *e;
	size_t n;
};

static void snap_add(struct dir_snap *d, const char *name, fuse_ino_t ino, mode_t mode)
{
	d->e = xrealloc(d->e, (d->n + 1) * sizeof(*d->e));
	d->e[d->n++] = (struct dirent_snap){xstrdup(name), ino, mode};
}

static void snap_sessions(struct dir_snap *d)
{
	struct session_info *v;
	size_t n = session_list(&v);

	snap_add(d, "clone", ctl_ino(0, K_CLONE, 0), S_IFREG);
	for (size_t i = 0; i < n; i++)
		snap_add(d, v[i].id, ctl_ino(v[i].serial, K_SDIR, 0), S_IFDIR);
	free(v);
}

static void snap_runs(struct dir_snap *d, fuse_ino_t ino)
{
	struct session *s = ctl_session(ino);
	unsigned *ns;
	size_t n;

	if (!s)
		return;
	n = session_runs(s, &ns);
	for (size_t i = 0; i < n; i++) {
		char name[16];

		snprintf(name, sizeof(name), "%u", ns[i]);
		snap_add(d, name, ctl_ino(ino_serial(ino), K_RUNDIR, ns[i]), S_IFDIR);
	}
	free(ns);
	session_unref(s);
}

static void snap_files(struct dir_snap *d, fuse_ino_t ino, int where)
{
	for (int k = K_RUNS; k < K_MAX; k++)
		if (kinds[k].where & where)
			snap_add(d, kinds[k].name, sibling(ino, k), kinds[k].mode & S_IFMT);
}

/* A session's procs/, or (s NULL) the root's procs/ of links. */
static void snap_jobs(struct dir_snap *d, fuse_ino_t ino)
{
	struct session *s = ino_kind(ino) == K_JOBS ? ctl_session(ino) : NULL;
	struct job_info *v;
	size_t n;

	if (ino_kind(ino) == K_JOBS && !s)
		return;
	snap_add(d, "ctl", s ? ctl_ino(session_serial(s), K_JOBSCTL, 0) : ctl_ino(0, K_ALLJOBSCTL, 0),
		 S_IFREG);
	n = job_list(s, &v);
	for (size_t i = 0; i < n; i++) {
		char *link;

		if (s) {
			snap_add(d, v[i].name, job_ino(v[i].serial, K_JOBDIR, v[i].id), S_IFDIR);
			continue;
		}
		link = xasprintf("%s:%s", v[i].session, v[i].name);
		snap_add(d, link, job_ino(v[i].serial, K_JOBLINK, v[i].id), S_IFLNK);
		free(link);
	}
	free(v);
	if (s)
		session_unref(s);
}

static void snap_terms(struct dir_snap *d, fuse_ino_t ino)
{
	struct session *s = ctl_session(ino);
	struct term_info *v;
	size_t n;

	if (!s)
		return;
	n = term_list(s, &v);
	for (size_t i = 0; i < n; i++)
		snap_add(d, v[i].name, job_ino(ino_serial(ino), K_TERMDIR, v[i].id), S_IFDIR);
	free(v);
	session_unref(s);
}

static fuse_ino_t parent_of(fuse_ino_t ino)
{
	switch (ino_kind(ino)) {
	case K_SDIR:
		return ctl_ino(0, K_SESSIONS, 0);
	case K_RUNS:
		return ctl_ino(ino_serial(ino), K_SDIR, 0);
	case K_RUNDIR:
		return ctl_ino(ino_serial(ino), K_RUNS, 0);
	case K_JOBS:
		return ctl_ino(ino_serial(ino), K_SDIR, 0);
	case K_JOBDIR:
		return ctl_ino(ino_serial(ino), K_JOBS, 0);
	case K_TERMS:
		return ctl_ino(ino_serial(ino), K_SDIR, 0);
	case K_TERMDIR:
		return ctl_ino(ino_serial(ino), K_TERMS, 0);
	default:
		return ctl_ino(0, K_ROOT, 0);
	}
}

void ctl_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	enum ctl_kind k = ino_kind(ino);
	struct dir_snap *d;
	struct stat st;

	if (ctl_stat(ino, &st, NULL, false) < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	d = xcalloc(1, sizeof(*d));
	snap_add(d, ".", ino, S_IFDIR);
	snap_add(d, "..", parent_of(ino), S_IFDIR);
	if (k == K_ROOT) {
		snap_add(d, "README", ctl_ino(0, K_README, 0), S_IFREG);
		snap_add(d, "contexts", ctxfs_root_ino(), S_IFDIR);
		snap_add(d, "env", ctl_ino(0, K_ROOTENV, 0), S_IFREG);
		snap_add(d, "limits", ctl_ino(0, K_LIMITS, 0), S_IFREG);
		snap_add(d, "procs", ctl_ino(0, K_ALLJOBS, 0), S_IFDIR);
		snap_add(d, "sessions", ctl_ino(0, K_SESSIONS, 0), S_IFDIR);
		snap_add(d, "workspace", ws_root_ino(), S_IFDIR);
	} else if (k == K_SESSIONS) {
		snap_sessions(d);
	} else if (k == K_RUNS) {
		snap_runs(d, ino);
	} else if (k == K_JOBS || k == K_ALLJOBS) {
		snap_jobs(d, ino);
	} else if (k == K_TERMS) {
		snap_terms(d, ino);
	} else {
		snap_files(d, ino,
			   k == K_SDIR     ? IN_SESSION
			   : k == K_RUNDIR ? IN_RUN
			   : k == K_TERMDIR ? IN_TERM
					    : IN_JOB);
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	fuse_reply_open(req, fi);
}

/* Readdirplus entries count a lookup, except "." and ".." (ino 0: no attributes given). */
static void plus_entry(const struct dirent_snap *de, struct fuse_entry_param *e)
{
	enum ctl_kind k = ino_kind(de->ino);

	memset(e, 0, sizeof(*e));
	e->attr.st_ino = de->ino;
	e->attr.st_mode = de->mode;
	if (!strcmp(de->name, ".") || !strcmp(de->name, ".."))
		return;
	if (ctx_is_ino(de->ino)) {
		if (ctxfs_stat(de->ino, &e->attr, NULL, false) == 0) {
			e->ino = de->ino;
			e->entry_timeout = FIXED_TIMEOUT;
		}
		return;
	}
	if (ws_is_ino(de->ino)) {
		if (ws_root_entry(e) < 0)
			memset(e, 0, sizeof(*e));
		return;
	}
	if (ctl_stat(de->ino, &e->attr, NULL, false) < 0)
		return;
	e->ino = de->ino;
	e->entry_timeout = ctl_entry_timeout(k);
}

static void readdir_common(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi,
			   bool plus)
{
	struct dir_snap *d = (struct dir_snap *)(uintptr_t)fi->fh;
	char *buf = xmalloc(size);
	size_t used = 0;

	for (size_t i = (size_t)off; i < d->n; i++) {
		struct fuse_entry_param e = {.attr = {.st_ino = d->e[i].ino, .st_mode = d->e[i].mode}};
		size_t need;

		if (plus) {
			plus_entry(&d->e[i], &e);
			need = fuse_add_direntry_plus(req, buf + used, size - used, d->e[i].name,
						      &e, (off_t)(i + 1));
		} else {
			need = fuse_add_direntry(req, buf + used, size - used, d->e[i].name,
						 &e.attr, (off_t)(i + 1));
		}
		if (need > size - used) {
			/* The workspace root counted a lookup the kernel will never see. */
			if (plus && e.ino && ws_is_ino(e.ino))
				ws_name_forget_one(e.ino, 1);
			break;
		}
		used += need;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

void ctl_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		 struct fuse_file_info *fi)
{
	(void)ino;
	readdir_common(req, size, off, fi, false);
}

void ctl_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)ino;
	readdir_common(req, size, off, fi, true);
}

void ctl_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dir_snap *d = (struct dir_snap *)(uintptr_t)fi->fh;

	(void)ino;
	for (size_t i = 0; i < d->n; i++)
		free(d->e[i].name);
	free(d->e);
	free(d);
	fuse_reply_err(req, 0);
}
