/* The control tree's names: lookup, and directory listings built at opendir (dirsnap.h), from
 * the rows of the files a directory holds (ctlkinds.c), or its own names: sessions, runs,
 * background processes. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl.h"
#include "ctlkind.h"
#include "dirsnap.h"
#include "job.h"
#include "session.h"
#include "xmalloc.h"

/* Builds an inode of the same owner (session, run or background process) as ino. */
static fuse_ino_t sibling(fuse_ino_t ino, enum ctl_kind k)
{
	return ino_job(ino) ? job_ino(ino_serial(ino), k, ino_job(ino))
			    : ctl_ino(ino_serial(ino), k, ino_run(ino));
}

static void ctl_lookup_sessions(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct session *s;

	(void)parent;
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
	for (int k = 0; k < K_MAX; k++) {
		if ((kind_row(k)->where & where) && strcmp(name, kind_row(k)->name) == 0) {
			reply_entry(req, sibling(parent, k));
			return;
		}
	}
	fuse_reply_err(req, ENOENT);
}

static void ctl_lookup_jobs(fuse_req_t req, fuse_ino_t parent, const char *name)
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
		reply_entry(req, job_ino(ino_serial(parent), K_JOBDIR, job_id(j)));
		job_unref(j);
	}
	if (s)
		session_unref(s);
}

/* "SESSION:NAME": names never hold a colon, so the first one splits them, and no two processes
 * share a link's name (with a dot, session a.b's process c and session a's b.c would). */
static void ctl_lookup_links(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	const char *colon = strchr(name, ':');
	struct session *s;
	struct job *j = NULL;
	char *sid;

	(void)parent;
	if (strcmp(name, "ctl") == 0) {
		reply_entry(req, ctl_ino(0, K_ALLJOBSCTL, 0));
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
		reply_entry(req, job_ino(session_serial(s), K_JOBLINK, job_id(j)));
	else
		fuse_reply_err(req, ENOENT);
	if (j)
		job_unref(j);
	if (s)
		session_unref(s);
}

static void ctl_lookup_runs(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	char *end;
	unsigned long n = strtoul(name, &end, 10);

	if (*end || end == name || name[0] == '0' || n > RUN_MAX) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	reply_entry(req, ctl_ino(ino_serial(parent), K_RUNDIR, (unsigned)n));
}

int ctl_root_entry(const char *name, struct fuse_entry_param *e)
{
	for (int k = 0; k < K_MAX; k++)
		if ((kind_row(k)->where & IN_ROOT) && strcmp(name, kind_row(k)->name) == 0)
			return ctl_entry(ctl_ino(0, k, 0), e);
	return -ENOENT;
}

void ctl_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	const struct kind_info *k = kind_row(ino_kind(parent));

	if (k->holds)
		lookup_file(req, parent, name, k->holds);
	else if (k->lookup)
		k->lookup(req, parent, name);
	else
		fuse_reply_err(req, ENOTDIR);
}

static void ctl_list_sessions(struct dirsnap *d, fuse_ino_t ino)
{
	struct session_info *v;
	size_t n = session_list(&v);

	(void)ino;
	dirsnap_add(d, "clone", ctl_ino(0, K_CLONE, 0), S_IFREG);
	for (size_t i = 0; i < n; i++)
		dirsnap_add(d, v[i].id, ctl_ino(v[i].serial, K_SDIR, 0), S_IFDIR);
	free(v);
}

static void ctl_list_runs(struct dirsnap *d, fuse_ino_t ino)
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

static void list_files(struct dirsnap *d, fuse_ino_t ino, int where)
{
	for (int k = 0; k < K_MAX; k++)
		if (kind_row(k)->where & where)
			dirsnap_add(d, kind_row(k)->name, ctl_served_ino(sibling(ino, k)),
				    kind_row(k)->mode & S_IFMT);
}

void ctl_list_root(struct dirsnap *d)
{
	list_files(d, FUSE_ROOT_ID, IN_ROOT);
}

/* A session's procs/: its ctl and a directory per process. */
static void ctl_list_jobs(struct dirsnap *d, fuse_ino_t ino)
{
	struct session *s = ctl_session(ino);
	struct job_info *v;
	size_t n;

	if (!s)
		return;
	dirsnap_add(d, "ctl", ctl_ino(session_serial(s), K_JOBSCTL, 0), S_IFREG);
	n = job_list(s, &v);
	for (size_t i = 0; i < n; i++)
		dirsnap_add(d, v[i].name, job_ino(v[i].serial, K_JOBDIR, v[i].id), S_IFDIR);
	free(v);
	session_unref(s);
}

/* The root's procs/: its ctl and a SESSION.NAME link per process of every session. */
static void ctl_list_links(struct dirsnap *d, fuse_ino_t ino)
{
	struct job_info *v;
	size_t n = job_list(NULL, &v);

	(void)ino;
	dirsnap_add(d, "ctl", ctl_ino(0, K_ALLJOBSCTL, 0), S_IFREG);
	for (size_t i = 0; i < n; i++) {
		char *link = xasprintf("%s:%s", v[i].session, v[i].name);

		dirsnap_add(d, link, job_ino(v[i].serial, K_JOBLINK, v[i].id), S_IFLNK);
		free(link);
	}
	free(v);
}

/* A directory's "..": the root's and a session's are at serial 0. */
static fuse_ino_t parent_of(fuse_ino_t ino)
{
	enum ctl_kind p = kind_row(ino_kind(ino))->parent;

	return ctl_ino(kind_row(p)->flags & KF_ROOT ? 0 : ino_serial(ino), p, 0);
}

void ctl_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	static const struct dirsnap_plus ctl_plus = {ctl_plus_fill, NULL};
	const struct kind_info *k = kind_row(ino_kind(ino));
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
	if (k->holds)
		list_files(d, ino, k->holds);
	else if (k->list)
		k->list(d, ino);
	dirsnap_open(req, d, &ctl_plus, fi);
}

/* The rows of the kinds this file serves (ctlkind.h). */

const struct kind_info root_row = {
    .name = "",
    .mode = DIR_MODE,
    .flags = KF_ROOT | KF_FIXED_ATTR,
};

const struct kind_info sessions_row = {
    .name = "sessions",
    .help = "one directory per shell session; ls lists them",
    .mode = DIR_MODE,
    .where = IN_ROOT,
    .flags = KF_ROOT | KF_FIXED_ATTR,
    .lookup = ctl_lookup_sessions,
    .list = ctl_list_sessions,
    .mkdir = ctl_mkdir_session,
    .rmdir = ctl_rmdir_session,
};

/* The root's procs/: SESSION.NAME links to every background process, and ctl. */
const struct kind_info alljobs_row = {
    .name = "procs",
    .help = "every background process, as SESSION:NAME links",
    .mode = DIR_MODE,
    .where = IN_ROOT,
    .flags = KF_ROOT | KF_FIXED_ATTR,
    .lookup = ctl_lookup_links,
    .list = ctl_list_links,
};

const struct kind_info sdir_row = {
    .name = "",
    .path = "sessions/ID/",
    .help = "mkdir creates a session (default always there), rmdir ends it",
    .mode = DIR_MODE,
    .flags = KF_FIXED_ATTR,
    .holds = IN_SESSION,
    .parent = K_SESSIONS,
};

const struct kind_info runs_row = {
    .name = "runs",
    .help = "the last commands, one directory each",
    .mode = DIR_MODE,
    .where = IN_SESSION,
    .flags = KF_FIXED_ATTR,
    .parent = K_SDIR,
    .lookup = ctl_lookup_runs,
    .list = ctl_list_runs,
};

const struct kind_info rundir_row = {
    .name = "",
    .path = "sessions/ID/runs/N/",
    .help = "command N's files, read-only",
    .mode = DIR_MODE,
    .flags = KF_FIXED_ATTR | KF_TRANSIENT,
    .holds = IN_RUN,
    .parent = K_RUNS,
};

const struct kind_info jobs_row = {
    .name = "procs",
    .help = "the session's background processes",
    .mode = DIR_MODE,
    .where = IN_SESSION,
    .flags = KF_FIXED_ATTR,
    .parent = K_SDIR,
    .lookup = ctl_lookup_jobs,
    .list = ctl_list_jobs,
    .mkdir = ctl_mkdir_job,
    .rmdir = ctl_rmdir_job,
};

const struct kind_info jobdir_row = {
    .name = "",
    .path = "sessions/ID/procs/NAME/",
    .help = "a background process: mkdir, then write its cmd",
    .mode = DIR_MODE,
    .flags = KF_FIXED_ATTR | KF_TRANSIENT,
    .holds = IN_JOB,
    .parent = K_JOBS,
};

/* Listed here, served by fs/terms, whose attributes for it are those of a session's
 * directory, as these. */
const struct kind_info terms_row = {
    .name = "terms",
    .mode = DIR_MODE,
    .where = IN_SESSION,
    .served = terms_dir_ino,
};
