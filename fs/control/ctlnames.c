/* The control tree's names: lookup, and directory listings (opendir, readdir, readdirplus,
 * releasedir) built from the table of files in ctltree.c and the core's sessions. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl.h"
#include "ctltree_priv.h"
#include "dirsnap.h"
#include "job.h"
#include "run.h"
#include "session.h"
#include "xmalloc.h"

/* Builds an inode of the same owner (session, run or background process) as ino. */
static fuse_ino_t sibling(fuse_ino_t ino, enum ctl_kind k)
{
	return ino_job(ino) ? job_ino(ino_serial(ino), k, ino_job(ino))
			    : ctl_ino(ino_serial(ino), k, ino_run(ino));
}

static void lookup_sessions(fuse_req_t req, const char *name)
{
	struct session *s;

	if (strcmp(name, "clone") == 0) {
		reply_entry(req, ctl_ino(0, K_CLONE, 0));
		return;
	}
	s = session_find(name);
	if (!s) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	reply_entry(req, ctl_ino(session_serial(s), K_SDIR, 0));
	session_unref(s);
}

static void lookup_file(fuse_req_t req, fuse_ino_t parent, const char *name, int where)
{
	for (int k = K_RUNS; k < K_MAX; k++) {
		if ((kinds[k].where & where) && strcmp(name, kinds[k].name) == 0) {
			reply_entry(req, sibling(parent, k));
			return;
		}
	}
	fuse_reply_err(req, ENOENT);
}

static void lookup_job(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct session *s;
	struct job *j;

	if (strcmp(name, "ctl") == 0) {
		reply_entry(req, ctl_ino(ino_serial(parent), K_JOBSCTL, 0));
		return;
	}
	s = ctl_session(parent);
	j = s ? job_find(s, name) : NULL;
	if (!j) {
		fuse_reply_err(req, ENOENT);
	} else {
		/* Timeout 0: a name removed and made again is a new process. */
		reply_entry(req, job_ino(ino_serial(parent), K_JOBDIR, job_id(j)));
		job_unref(j);
	}
	if (s)
		session_unref(s);
}

/* "SESSION.NAME": both may hold dots, so try every split. */
static void lookup_joblink(fuse_req_t req, const char *name)
{
	char *copy;

	if (strcmp(name, "ctl") == 0) {
		reply_entry(req, ctl_ino(0, K_ALLJOBSCTL, 0));
		return;
	}
	copy = xstrdup(name);

	for (char *dot = strchr(copy, '.'); dot; dot = strchr(dot + 1, '.')) {
		struct session *s;
		struct job *j;

		*dot = '\0';
		s = session_find(copy);
		j = s ? job_find(s, dot + 1) : NULL;
		*dot = '.';
		if (j) {
			reply_entry(req, job_ino(session_serial(s), K_JOBLINK, job_id(j)));
			job_unref(j);
			session_unref(s);
			free(copy);
			return;
		}
		if (s)
			session_unref(s);
	}
	free(copy);
	fuse_reply_err(req, ENOENT);
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
	reply_entry(req, ctl_ino(ino_serial(parent), K_RUNDIR, (unsigned)n));
}

void ctl_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	switch (ino_kind(parent)) {
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
	default:
		fuse_reply_err(req, ENOTDIR);
	}
}

static void snap_sessions(struct dirsnap *d)
{
	struct session_info *v;
	size_t n = session_list(&v);

	dirsnap_add(d, "clone", ctl_ino(0, K_CLONE, 0), S_IFREG);
	for (size_t i = 0; i < n; i++)
		dirsnap_add(d, v[i].id, ctl_ino(v[i].serial, K_SDIR, 0), S_IFDIR);
	free(v);
}

static void snap_runs(struct dirsnap *d, fuse_ino_t ino)
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
		dirsnap_add(d, name, ctl_ino(ino_serial(ino), K_RUNDIR, ns[i]), S_IFDIR);
	}
	free(ns);
	session_unref(s);
}

static void snap_files(struct dirsnap *d, fuse_ino_t ino, int where)
{
	for (int k = K_RUNS; k < K_MAX; k++)
		if (kinds[k].where & where)
			dirsnap_add(d, kinds[k].name, sibling(ino, k), kinds[k].mode & S_IFMT);
}

/* A session's procs/, or (s NULL) the root's procs/ of links. */
static void snap_jobs(struct dirsnap *d, fuse_ino_t ino)
{
	struct session *s = ino_kind(ino) == K_JOBS ? ctl_session(ino) : NULL;
	struct job_info *v;
	size_t n;

	if (ino_kind(ino) == K_JOBS && !s)
		return;
	dirsnap_add(d, "ctl",
		    s ? ctl_ino(session_serial(s), K_JOBSCTL, 0) : ctl_ino(0, K_ALLJOBSCTL, 0),
		    S_IFREG);
	n = job_list(s, &v);
	for (size_t i = 0; i < n; i++) {
		char *link;

		if (s) {
			dirsnap_add(d, v[i].name, job_ino(v[i].serial, K_JOBDIR, v[i].id), S_IFDIR);
			continue;
		}
		link = xasprintf("%s.%s", v[i].session, v[i].name);
		dirsnap_add(d, link, job_ino(v[i].serial, K_JOBLINK, v[i].id), S_IFLNK);
		free(link);
	}
	free(v);
	if (s)
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
	default:
		return ctl_ino(0, K_ROOT, 0);
	}
}

void ctl_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	enum ctl_kind k = ino_kind(ino);
	struct dirsnap *d;
	struct stat st;

	if (ctl_stat(ino, &st, NULL, false) < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	d = dirsnap_new(ino, parent_of(ino));
	if (k == K_SESSIONS) {
		snap_sessions(d);
	} else if (k == K_RUNS) {
		snap_runs(d, ino);
	} else if (k == K_JOBS || k == K_ALLJOBS) {
		snap_jobs(d, ino);
	} else {
		snap_files(d, ino, k == K_SDIR ? IN_SESSION : k == K_RUNDIR ? IN_RUN : IN_JOB);
	}
	dirsnap_open(req, d, fi);
}

void ctl_readdir(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi, bool plus)
{
	static const struct dirsnap_plus ctl_plus = {ctl_plus_fill, NULL};

	dirsnap_read(req, fi, size, off, plus ? &ctl_plus : NULL);
}
