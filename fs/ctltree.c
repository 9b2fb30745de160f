/* The control tree's names, attributes and directories: lookup, getattr, readdir, and mkdir /
 * rmdir of sessions. Inode numbers come from ino.h; sessions from the core. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "job.h"
#include "park.h"
#include "run.h"
#include "session.h"
#include "term.h"
#include "workspace.h"
#include "xmalloc.h"

/* where: which directories hold the file: a session's, a run's, a background process's. */
enum { IN_SESSION = 1, IN_RUN = 2, IN_JOB = 4, IN_TERM = 8 };

struct kind_info {
	const char *name;
	mode_t mode;
	int where;
};

static const struct kind_info kinds[K_MAX] = {
	[K_ROOT] = {"", S_IFDIR | 0755, 0},
	[K_README] = {"README", S_IFREG | 0444, 0},
	[K_LIMITS] = {"limits", S_IFREG | 0444, 0},
	[K_SESSIONS] = {"sessions", S_IFDIR | 0755, 0},
	[K_CLONE] = {"clone", S_IFREG | 0444, 0},
	[K_SDIR] = {"", S_IFDIR | 0755, 0},
	[K_RUNS] = {"runs", S_IFDIR | 0755, IN_SESSION},
	[K_RUNDIR] = {"", S_IFDIR | 0755, 0},
	[K_CMD] = {"cmd", S_IFREG | 0644, IN_SESSION | IN_RUN | IN_JOB},
	[K_STDOUT] = {"stdout", S_IFREG | 0444, IN_SESSION | IN_RUN | IN_JOB},
	[K_STDERR] = {"stderr", S_IFREG | 0444, IN_SESSION | IN_RUN | IN_JOB},
	[K_EXIT] = {"exit", S_IFREG | 0444, IN_SESSION | IN_RUN | IN_JOB},
	[K_STATUS] = {"status", S_IFREG | 0444, IN_SESSION | IN_RUN | IN_JOB},
	[K_ENV] = {"env", S_IFREG | 0644, IN_SESSION},
	[K_CWD] = {"cwd", S_IFREG | 0644, IN_SESSION},
	[K_TIMEOUT] = {"timeout", S_IFREG | 0644, IN_SESSION},
	[K_CTL] = {"ctl", S_IFREG | 0200, IN_SESSION | IN_JOB},
	[K_STDIN] = {"stdin", S_IFREG | 0200, IN_SESSION | IN_JOB},
	[K_JOBS] = {"procs", S_IFDIR | 0755, IN_SESSION},
	[K_JOBDIR] = {"", S_IFDIR | 0755, 0},
	[K_SIGNAL] = {"signal", S_IFREG | 0200, IN_JOB},
	[K_PORTS] = {"ports", S_IFREG | 0444, IN_JOB},
	[K_READY] = {"ready", S_IFREG | 0444, IN_JOB},
	[K_ALLJOBS] = {"procs", S_IFDIR | 0755, 0},
	[K_JOBLINK] = {"", S_IFLNK | 0777, 0},
	[K_CHECKOUT] = {"checkout", S_IFREG | 0644, IN_SESSION},
	[K_RESULT] = {"result", S_IFREG | 0444, IN_SESSION | IN_RUN},
	[K_OUTPUT] = {"output", S_IFREG | 0444, IN_SESSION | IN_RUN | IN_JOB},
	[K_JOBSCTL] = {"ctl", S_IFREG | 0200, 0},
	[K_ALLJOBSCTL] = {"ctl", S_IFREG | 0200, 0},
	[K_ROOTENV] = {"env", S_IFREG | 0644, 0},
	[K_TERMS] = {"terms", S_IFDIR | 0755, IN_SESSION},
	[K_TERMDIR] = {"", S_IFDIR | 0755, 0},
	[K_TCMD] = {"cmd", S_IFREG | 0644, IN_TERM},
	[K_TIN] = {"in", S_IFREG | 0200, IN_TERM},
	[K_TOUT] = {"out", S_IFREG | 0444, IN_TERM},
	[K_TSCREEN] = {"screen", S_IFREG | 0444, IN_TERM},
	[K_TSIZE] = {"size", S_IFREG | 0644, IN_TERM},
	[K_TCTL] = {"ctl", S_IFREG | 0200, IN_TERM},
	[K_TEXIT] = {"exit", S_IFREG | 0444, IN_TERM},
	[K_TWAIT] = {"wait", S_IFREG | 0644, IN_TERM},
	[K_TSTATUS] = {"status", S_IFREG | 0444, IN_TERM},
	[K_TTY] = {"tty", S_IFREG | 0644, IN_JOB},
};

/* The root level has no session behind it. */
static bool root_level(enum ctl_kind k)
{
	return k == K_ROOT || k == K_README || k == K_LIMITS || k == K_SESSIONS || k == K_CLONE ||
	       k == K_ALLJOBS || k == K_ALLJOBSCTL || k == K_ROOTENV;
}

/* Directories and links hold no open handles. */
static bool is_file(enum ctl_kind k)
{
	return S_ISREG(kinds[k].mode);
}

/* Builds an inode of the same owner (session, run or background process) as ino. */
static fuse_ino_t sibling(fuse_ino_t ino, enum ctl_kind k)
{
	return ino_job(ino) ? job_ino(ino_serial(ino), k, ino_job(ino))
			    : ctl_ino(ino_serial(ino), k, ino_run(ino));
}

/* A file's mode: a run's files are history, read-only. */
static mode_t kind_mode(enum ctl_kind k, unsigned run)
{
	return run ? (kinds[k].mode & ~(mode_t)0222) : kinds[k].mode;
}

/* Names at the root and in sessions/ never change: let the kernel keep them. */
#define FIXED_TIMEOUT 3600.0

static struct timespec mount_time;

struct session *ctl_session(fuse_ino_t ino)
{
	uint64_t serial = ino_serial(ino);

	return serial ? session_find_serial(serial) : NULL;
}

static void stat_stream(struct run *r, enum run_stream s, struct stat *st)
{
	if (!r)
		return;
	run_stream_stat(r, s, &st->st_size, &st->st_mtim);
}

static void stat_exit(struct run *r, struct stat *st)
{
	int status;

	if (r && run_wait_exit(r, &status, NULL) == 0)
		st->st_size = snprintf(NULL, 0, "%d\n", status);
}

static struct run *run_of(struct session *s, fuse_ino_t ino)
{
	struct run *r = NULL;
	struct job *j;

	if (ino_job(ino)) {
		j = job_find_id(s, ino_job(ino));
		if (j) {
			r = job_run(j);
			job_unref(j);
		}
		return r;
	}
	return ino_run(ino) ? session_run(s, ino_run(ino)) : session_latest(s);
}

static char *link_target(struct session *s, unsigned id)
{
	struct job *j = job_find_id(s, id);
	char *target;

	if (!j)
		return NULL;
	target = xasprintf("../sessions/%s/procs/%s", session_id(s), job_name(j));
	job_unref(j);
	return target;
}

static void stat_session_file(struct session *s, fuse_ino_t ino, struct stat *st)
{
	enum ctl_kind k = ino_kind(ino);
	struct run *r;
	char *target;

	if (k == K_JOBLINK) {
		target = link_target(s, ino_job(ino));
		st->st_size = target ? (off_t)strlen(target) : 0;
		free(target);
		return;
	}
	r = k == K_CHECKOUT ? session_checkout_run(s) : run_of(s, ino);
	if (k == K_STDOUT || k == K_STDERR || k == K_OUTPUT || k == K_CHECKOUT)
		stat_stream(r,
			    k == K_STDERR   ? RUN_STDERR
			    : k == K_OUTPUT ? RUN_OUTPUT
					    : RUN_STDOUT,
			    st);
	else if (k == K_EXIT)
		stat_exit(r, st);
	else if (k == K_CMD && r)
		st->st_size = (off_t)r->cmdlen;
	if (r)
		run_unref(r);
}

/* Per-session inodes exist while their session (and their run or process) does. */
static int check_exists(struct session *s, fuse_ino_t ino)
{
	struct run *r;
	struct job *j;
	struct term *t;

	if (ino_is_term(ino)) {
		t = term_find_id(s, ino_term(ino));
		if (!t)
			return -ENOENT;
		term_unref(t);
		return 0;
	}
	if (ino_job(ino)) {
		j = job_find_id(s, ino_job(ino));
		if (!j)
			return -ENOENT;
		job_unref(j);
		return 0;
	}
	if (!ino_run(ino))
		return ino_kind(ino) == K_RUNDIR ? -ENOENT : 0;
	r = session_run(s, ino_run(ino));
	if (!r)
		return -ENOENT;
	run_unref(r);
	return 0;
}

int ctl_stat(fuse_ino_t ino, struct stat *st, struct fuse_file_info *fi, bool held)
{
	enum ctl_kind k = ino_kind(ino);
	struct session *s = NULL;
	bool open_handle;

	if (k >= K_MAX)
		return -ENOENT;
	/* fstat on a file of a removed session comes without its handle: the kernel still
	 * holds the inode, so it gets attributes (size 0), not ENOENT, and `cat` keeps working. */
	open_handle = ((fi && fi->fh) || held) && is_file(k);
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = kind_mode(k, ino_run(ino));
	st->st_nlink = S_ISDIR(st->st_mode) ? 2 : 1;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_blksize = 4096;
	st->st_mtim = st->st_ctim = st->st_atim = mount_time;
	if (!root_level(k)) {
		s = ctl_session(ino);
		/* An open file outlives its session: fstat on it still works. */
		if ((!s || check_exists(s, ino) < 0) && !open_handle) {
			if (s)
				session_unref(s);
			return -ENOENT;
		}
		if (s)
			st->st_mtim = st->st_ctim = st->st_atim = session_ctime(s);
	}
	if (k == K_README)
		st->st_size = (off_t)strlen(readme_text);
	else if (s && ino_is_term(ino))
		termfile_stat(ino, s, st);
	else if (open_handle && fi && fi->fh && !ino_is_term(ino) && ctlfile_stat(fi, st) == 0)
		;
	else if (ctl_rendered_size(ino, s, &st->st_size) == 0)
		;
	else if (s && (is_file(k) || k == K_JOBLINK))
		stat_session_file(s, ino, st);
	if (s)
		session_unref(s);
	st->st_blocks = (st->st_size + 511) / 512;
	return 0;
}

static void reply_entry(fuse_req_t req, fuse_ino_t ino, double timeout)
{
	struct fuse_entry_param e = {0};
	int rc = ctl_stat(ino, &e.attr, NULL, false);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	e.ino = ino;
	e.entry_timeout = timeout;
	e.attr_timeout = 0;
	fuse_reply_entry(req, &e);
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
	/* Timeout 0: a session removed and made again under the same name is a new directory. */
	reply_entry(req, ctl_ino(session_serial(s), K_SDIR, 0), 0);
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

/* "SESSION.NAME": both may hold dots, so try every split. */
static void lookup_joblink(fuse_req_t req, const char *name)
{
	char *copy;

	if (strcmp(name, "ctl") == 0) {
		reply_entry(req, ctl_ino(0, K_ALLJOBSCTL, 0), FIXED_TIMEOUT);
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
			reply_entry(req, job_ino(session_serial(s), K_JOBLINK, job_id(j)), 0);
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

void ctl_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct session *s = ctl_session(ino);
	char *target = s && ino_kind(ino) == K_JOBLINK ? link_target(s, ino_job(ino)) : NULL;

	if (target)
		fuse_reply_readlink(req, target);
	else
		fuse_reply_err(req, s ? EINVAL : ENOENT);
	free(target);
	if (s)
		session_unref(s);
}

void ctl_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	int rc = ctl_stat(ino, &st, fi, true);

	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, 0);
}

void ctl_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		 struct fuse_file_info *fi)
{
	const int harmless = FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
			     FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME;
	mode_t mode = kind_mode(ino_kind(ino) < K_MAX ? ino_kind(ino) : K_ROOT, ino_run(ino));

	/* `echo x > cmd` truncates and `touch` sets times: accept both as no-ops on the files one
	 * writes to. Read-only files refuse even root. */
	if (!S_ISREG(mode) || !(mode & S_IWUSR) || (to_set & ~harmless) ||
	    ((to_set & FUSE_SET_ATTR_SIZE) && attr->st_size != 0)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	ctl_getattr(req, ino, fi);
}

static void mkdir_job(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct session *s = ctl_session(parent);
	struct job *j;
	int rc = s ? job_create(s, name) : -ENOENT;

	j = rc == 0 ? job_find(s, name) : NULL;
	if (j) {
		reply_entry(req, job_ino(ino_serial(parent), K_JOBDIR, job_id(j)), 0);
		job_unref(j);
	} else {
		fuse_reply_err(req, rc < 0 ? -rc : ENOENT);
	}
	if (s)
		session_unref(s);
}

static void mkdir_term(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct session *s = ctl_session(parent);
	int rc = s ? term_create(s, name) : -ENOENT;
	struct term *t = rc == 0 ? term_find(s, name) : NULL;

	if (t) {
		reply_entry(req, job_ino(ino_serial(parent), K_TERMDIR, term_id(t)), 0);
		term_unref(t);
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
		reply_entry(park_req(p), mr->ino, 0);
	return 0;
}

void ctl_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct mkdir_req *mr;
	struct ticket *ready;
	struct session *s;
	int rc;

	(void)mode;
	if (ino_kind(parent) == K_TERMS) {
		mkdir_term(req, parent, name);
		return;
	}
	if (ino_kind(parent) == K_JOBS) {
		if (strcmp(name, "ctl") == 0)
			fuse_reply_err(req, EEXIST); /* procs/ctl is a file */
		else
			mkdir_job(req, parent, name);
		return;
	}
	if (ino_kind(parent) != K_SESSIONS) {
		fuse_reply_err(req, EPERM);
		return;
	}
	rc = session_create(name, &s, &ready);
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

void ctl_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct ticket *gone;
	int rc;

	if (ino_kind(parent) == K_TERMS) {
		struct session *s = ctl_session(parent);

		/* answered once its tree is gone */
		rc = s ? term_remove(s, name) : -ENOENT;
		fuse_reply_err(req, -rc);
		if (s)
			session_unref(s);
		return;
	}
	if (ino_kind(parent) == K_JOBS) {
		struct session *s = ctl_session(parent);

		rc = strcmp(name, "ctl") == 0 ? -ENOTDIR : s ? job_remove(s, name) : -ENOENT;
		fuse_reply_err(req, -rc);
		if (s)
			session_unref(s);
		return;
	}
	if (ino_kind(parent) != K_SESSIONS) {
		fuse_reply_err(req, EPERM);
		return;
	}
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
		link = xasprintf("%s.%s", v[i].session, v[i].name);
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
	if (ws_is_ino(de->ino)) {
		if (ws_root_entry(e) < 0)
			memset(e, 0, sizeof(*e));
		return;
	}
	if (ctl_stat(de->ino, &e->attr, NULL, false) < 0)
		return;
	e->ino = de->ino;
	e->entry_timeout =
	    k == K_SDIR || k == K_RUNDIR || k == K_JOBDIR || k == K_JOBLINK || k == K_TERMDIR
		? 0
		: FIXED_TIMEOUT;
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
				ws_forget_one(e.ino, 1);
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

__attribute__((constructor)) static void ctltree_init(void)
{
	clock_gettime(CLOCK_REALTIME, &mount_time);
}
