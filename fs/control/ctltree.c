/* The control tree's table of files and their attributes: getattr, setattr, readlink, and the
 * entry replies lookup and mkdir give. Inode numbers come from ino.h; sessions from the core. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "ctltree_priv.h"
#include "nodeattr.h"
#include "job.h"
#include "run.h"
#include "session.h"
#include "xmalloc.h"

const struct kind_info kinds[K_MAX] = {
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
    /* served by fs/terms, which answers the same attributes as a session's directory has */
    [K_TERMS] = {"terms", S_IFDIR | 0755, IN_SESSION},
};

#define STREAM_BLKSIZE	   (512 << 10)
#define FIXED_ATTR_TIMEOUT 3600.0
#define FIXED_TIMEOUT	   3600.0

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

/* A file's mode: a run's files are history, read-only. */
static mode_t kind_mode(enum ctl_kind k, unsigned run)
{
	return run ? (kinds[k].mode & ~(mode_t)0222) : kinds[k].mode;
}

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

	if (k >= K_MAX || !kinds[k].mode)
		return -ENOENT;
	/* fstat on a file of a removed session comes without its handle: the kernel still
	 * holds the inode, so it gets attributes (size 0), not ENOENT, and `cat` keeps working. */
	open_handle = ((fi && fi->fh) || held) && is_file(k);
	nodeattr_init(st, ino, kind_mode(k, ino_run(ino)), NULL);
	/* Output streams: copiers (cat, cp) size their reads by it, and one 512 KiB read is one
	 * FUSE request instead of four. Not 1 MiB: libfuse's splice pipe (at most 1 MiB) could not
	 * hold the reply, and each read went through a malloc'd copy (RSS 65 MiB after a stream). */
	if (k == K_STDOUT || k == K_STDERR || k == K_OUTPUT)
		st->st_blksize = STREAM_BLKSIZE;
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
	else if (open_handle && fi && fi->fh && ctlfile_stat(fi, st) == 0)
		;
	else if (ctl_rendered_size(ino, s, &st->st_size) == 0)
		;
	else if (s && (is_file(k) || k == K_JOBLINK))
		stat_session_file(s, ino, st);
	if (s)
		session_unref(s);
	nodeattr_blocks(st);
	return 0;
}

/* Directories have attributes fixed for their life (mode, owner, size 0,
 * the mount's or their session's time): the kernel may keep them, and a path walk then asks
 * for them once instead of at every component. Files keep 0: their sizes are true ones. */
static double attr_timeout(fuse_ino_t ino)
{
	enum ctl_kind k = ino_kind(ino);

	return k == K_ROOT || k == K_SESSIONS || k == K_SDIR || k == K_RUNS || k == K_RUNDIR ||
		       k == K_JOBS || k == K_JOBDIR || k == K_ALLJOBS
		   ? FIXED_ATTR_TIMEOUT
		   : 0;
}

/* How long the kernel may keep a name. Names at the root and in sessions/ never change. A
 * session's directory goes only by rmdir, which drops the kernel's entry itself, so it is kept:
 * a path walk to a session's file then costs no LOOKUP. Runs, processes and terminals go on
 * their own (history, exit), and a name removed and made again is a new one: 0. */
static double entry_timeout(enum ctl_kind k)
{
	return k == K_RUNDIR || k == K_JOBDIR || k == K_JOBLINK ? 0 : FIXED_TIMEOUT;
}

int ctl_entry(fuse_ino_t ino, struct fuse_entry_param *e)
{
	int rc = ctl_stat(ino, &e->attr, NULL, false);

	if (rc < 0)
		return rc;
	e->ino = ino;
	e->entry_timeout = entry_timeout(ino_kind(ino));
	e->attr_timeout = attr_timeout(ino);
	return 0;
}

/* Readdirplus entries count a lookup too, but give no attribute timeout (a getattr does). */
void ctl_plus_fill(const struct dirsnap_entry *de, struct fuse_entry_param *e)
{
	struct stat st;

	if (ctl_stat(de->ino, &st, NULL, false) < 0)
		return;
	e->attr = st;
	e->ino = de->ino;
	e->entry_timeout = entry_timeout(ino_kind(de->ino));
}

void reply_entry(fuse_req_t req, fuse_ino_t ino)
{
	struct fuse_entry_param e = {0};
	int rc = ctl_entry(ino, &e);

	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_entry(req, &e);
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
		fuse_reply_attr(req, &st, attr_timeout(ino));
}

void ctl_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		 struct fuse_file_info *fi)
{
	mode_t mode = kind_mode(ino_kind(ino) < K_MAX ? ino_kind(ino) : K_ROOT, ino_run(ino));

	if (!nodeattr_settable(mode, attr, to_set)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	ctl_getattr(req, ino, fi);
}
