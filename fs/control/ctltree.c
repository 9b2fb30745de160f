/* The control tree's attributes, from its kinds' rows (ctlkinds.c): getattr, setattr, readlink,
 * and the entries lookup, mkdir and readdirplus give. Inode numbers come from ino.h; sessions
 * from the core. A file's size is its open handle's (fstat), or what a binding of its inode,
 * as an open makes, says now. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl.h"
#include "ctlfile_priv.h"
#include "job.h"
#include "nodeattr.h"
#include "run.h"
#include "session.h"
#include "xmalloc.h"

/* Output streams: copiers (cat, cp) size their reads by it, and one 512 KiB read is one FUSE
 * request instead of four. Not 1 MiB: libfuse's splice pipe (at most 1 MiB) could not hold the
 * reply, and each read went through a malloc'd copy (RSS 65 MiB after a stream). */
#define STREAM_BLKSIZE	   (512 << 10)
#define FIXED_ATTR_TIMEOUT 3600.0
#define FIXED_TIMEOUT	   3600.0

/* A file's mode: a run's files are history, read-only. */
static mode_t kind_mode(const struct kind_info *k, fuse_ino_t ino)
{
	return ino_run(ino) ? (k->mode & ~(mode_t)0222) : k->mode;
}

struct session *ctl_session(fuse_ino_t ino)
{
	uint64_t serial = ino_serial(ino);

	return serial ? session_find_serial(serial) : NULL;
}

void ctl_size_cmd(struct ctlfh *fh, struct stat *st)
{
	if (fh->run)
		st->st_size = (off_t)fh->run->cmdlen;
}

void ctl_size_stream(struct ctlfh *fh, struct stat *st)
{
	if (fh->run)
		run_stream_stat(fh->run, fh_row(fh)->stream, &st->st_size, &st->st_mtim);
}

void ctl_size_exit(struct ctlfh *fh, struct stat *st)
{
	int status;

	if (fh->run && run_wait_exit(fh->run, &status, NULL) == 0)
		st->st_size = snprintf(NULL, 0, "%d\n", status);
}

/* procs/SESSION.NAME: the process's directory in its session's procs/. */
static char *link_target(struct session *s, struct job *j)
{
	return xasprintf("../sessions/%s/procs/%s", session_id(s), job_name(j));
}

void ctl_size_link(struct ctlfh *fh, struct stat *st)
{
	char *target = link_target(fh->s, fh->job);

	st->st_size = (off_t)strlen(target);
	free(target);
}

/* The size of a file, or a link, now: what its row says of a binding of ino (none for the
 * root's, which have no session), as an open would make it. */
static void size_now(fuse_ino_t ino, struct session *s, struct stat *st)
{
	const struct kind_info *k = kind_row(ino_kind(ino));
	struct ctlfh b = {.kind = ino_kind(ino), .n = ino_run(ino)};
	size_t len;
	char *text;

	if (!k->size && !k->render)
		return;
	if (!(k->flags & KF_ROOT) && (!s || ctl_bind(&b, ino) < 0)) {
		ctl_unbind(&b);
		return;
	}
	if (k->size) {
		k->size(&b, st);
	} else if ((text = k->render(&b, &len))) {
		st->st_size = (off_t)len;
		free(text);
	}
	ctl_unbind(&b);
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
	const struct kind_info *k = kind_row(ino_kind(ino));
	struct session *s = NULL;
	bool open_handle;

	if (!k->mode)
		return -ENOENT;
	/* fstat on a file of a removed session comes without its handle: the kernel still
	 * holds the inode, so it gets attributes (size 0), not ENOENT, and `cat` keeps working. */
	open_handle = ((fi && fi->fh) || held) && S_ISREG(k->mode);
	nodeattr_init(st, ino, kind_mode(k, ino), NULL);
	if (k->flags & KF_BIG_BLOCKS)
		st->st_blksize = STREAM_BLKSIZE;
	if (!(k->flags & KF_ROOT)) {
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
	if (!open_handle || !fi || !fi->fh || ctl_fstat(fi, st) < 0)
		size_now(ino, s, st);
	if (s)
		session_unref(s);
	nodeattr_blocks(st);
	return 0;
}

/* Directories have attributes fixed for their life (mode, owner, size 0, the mount's or their
 * session's time): the kernel may keep them, and a path walk then asks for them once instead
 * of at every component. Files keep 0: their sizes are true ones. */
static double attr_timeout(fuse_ino_t ino)
{
	return kind_row(ino_kind(ino))->flags & KF_FIXED_ATTR ? FIXED_ATTR_TIMEOUT : 0;
}

/* How long the kernel may keep a name. Names at the root and in sessions/ never change. A
 * session's directory goes only by rmdir, which drops the kernel's entry itself, so it is kept:
 * a path walk to a session's file then costs no LOOKUP. */
static double entry_timeout(fuse_ino_t ino)
{
	return kind_row(ino_kind(ino))->flags & KF_TRANSIENT ? 0 : FIXED_TIMEOUT;
}

fuse_ino_t ctl_served_ino(fuse_ino_t ino)
{
	const struct kind_info *k = kind_row(ino_kind(ino));

	return k->served ? k->served(ino_serial(ino)) : ino;
}

int ctl_entry(fuse_ino_t ino, struct fuse_entry_param *e)
{
	int rc = ctl_stat(ino, &e->attr, NULL, false);

	if (rc < 0)
		return rc;
	e->ino = ctl_served_ino(ino);
	e->attr.st_ino = e->ino;
	e->entry_timeout = entry_timeout(ino);
	e->attr_timeout = attr_timeout(ino);
	return 0;
}

/* Readdirplus entries count a lookup too, but give no attribute timeout (a getattr does).
 * Another part's directory gets none: the kernel looks it up. */
void ctl_plus_fill(const struct dirsnap_entry *de, struct fuse_entry_param *e)
{
	struct stat st;

	if (ino_part(de->ino) != PART_CONTROL || ctl_stat(de->ino, &st, NULL, false) < 0)
		return;
	e->attr = st;
	e->ino = de->ino;
	e->entry_timeout = entry_timeout(de->ino);
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
	struct job *j =
	    s && S_ISLNK(kind_row(ino_kind(ino))->mode) ? job_find_id(s, ino_job(ino)) : NULL;
	char *target = j ? link_target(s, j) : NULL;

	if (target)
		fuse_reply_readlink(req, target);
	else
		fuse_reply_err(req, s ? EINVAL : ENOENT);
	free(target);
	if (j)
		job_unref(j);
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
	if (!nodeattr_settable(kind_mode(kind_row(ino_kind(ino)), ino), attr, to_set)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	ctl_getattr(req, ino, fi);
}

const struct fuse_lowlevel_ops ctl_ops = {
    .lookup = ctl_lookup,
    .getattr = ctl_getattr,
    .setattr = ctl_setattr,
    .readlink = ctl_readlink,
    .mkdir = ctl_mkdir,
    .rmdir = ctl_rmdir,
    .open = ctl_open,
    .read = ctl_read,
    .write = ctl_write,
    .flush = ctl_flush,
    .release = ctl_release,
    .opendir = ctl_opendir,
    .readdir = dirsnap_readdir,
    .readdirplus = dirsnap_readdirplus,
    .releasedir = dirsnap_releasedir,
    .poll = ctl_poll,
};
