/* What the workspace's files share among themselves (not for the rest of fs/): the inode and
 * open file structures and each file's entry points. workspace.c has the shared helpers, the
 * operation table and the setup, ws_name.c the handlers of names, ws_attr.c those of attributes,
 * ws_file.c those of open files, ws_dir.c those of open directories, ws_inode.c the inode table,
 * ws_budget.c the descriptor budget, ws_inval.c the coherence with the sandbox's changes, ws_cred.c
 * the caller's credentials, ws_dev.c what is done below libfuse. */
#ifndef SBX_WS_PRIV_H
#define SBX_WS_PRIV_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "workspace.h"

struct file_handle;

struct ws_inode {
	dev_t dev;
	ino_t ino;
	bool isdir;
	bool pinned; /* the root: never freed, its fd never closed */
	/* Under the table lock (ws_inode.c, ws_budget.c). */
	int fd;		  /* O_PATH|O_NOFOLLOW of the backing file; -1 while closed (fd budget) */
	int uses;	  /* operations using fd right now: it is not closed under them */
	uint64_t nlookup; /* lookups the kernel holds */
	int refs;      /* other holders: children naming it as their parent, the coherence code */
	bool intab;    /* in the hash table: the kernel knows it */
	bool uncached; /* its parent or itself has no watch: the kernel must not keep it */
	struct ws_inode *next;		      /* hash chain */
	struct ws_inode *lru_prev, *lru_next; /* open and unused: the oldest is closed first */
	struct ws_inode *parent;	      /* where it was last seen, to reopen it by name */
	char *name;
	/* A file seen with more than one link: another name's removal changes its attributes. */
	bool multi;
	struct ws_inode *multi_prev, *multi_next;
	struct file_handle
	    *handle; /* taken when its fd is closed, if the daemon may reopen by it */
	/* Coherence (ws_inval.c), under the table lock: the inotify watch of a directory. */
	int wd; /* -1: none */
	struct ws_inode *wd_next;
	unsigned mark; /* last drain that invalidated it */
	/* Passthrough (ws_dev.c): the kernel wants one backing file per inode for all its
	 * passthrough opens. Registered at the first, closed after the last; under pt_lock. */
	int backing_id;
	int backing_fd;
	int backing_refs;
	bool backing_rw; /* opened O_RDWR: serves writers too */
};

/* An open regular file: its own fd of the backing file (flock, fsync, daemon-side I/O) and,
 * when it is a passthrough open, the inode whose backing file the kernel uses. */
struct ws_file {
	int fd;
	struct ws_inode *pt; /* NULL: not passthrough */
};

static inline struct ws_inode *inode_of(fuse_ino_t ino)
{
	return (struct ws_inode *)(uintptr_t)ino;
}

static inline fuse_ino_t ino_of(struct ws_inode *in)
{
	return (fuse_ino_t)(uintptr_t)in;
}

static inline struct ws_file *file_of(struct fuse_file_info *fi)
{
	return (struct ws_file *)(uintptr_t)fi->fh;
}

static inline int file_fd(struct fuse_file_info *fi)
{
	return file_of(fi)->fd;
}

#define PROC_FD_LEN 32

/* The magic link naming the inode behind fd: opening or following it reaches that inode
 * itself (a symlink included, which is not followed further), never a path. */
static inline const char *proc_path(char buf[PROC_FD_LEN], int fd)
{
	snprintf(buf, PROC_FD_LEN, "/proc/self/fd/%d", fd);
	return buf;
}

static inline int neg_errno(int res)
{
	return res == -1 ? -errno : 0;
}

static inline void reply_res(fuse_req_t req, int res)
{
	fuse_reply_err(req, -res);
}

/* ---- workspace.c: helpers of the handlers ---- */

/* Attributes as the kernel sees them: owners through the idmap. */
int ws_stat_fd(int fd, struct stat *st);
/* Whether the kernel may keep what it learns of in, and for how long. */
bool ws_cacheable(struct ws_inode *in);
double ws_attr_timeout(struct ws_inode *in);
/* Whether the kernel may keep what it learns at all (absences included). */
bool ws_caching(void);
void ws_warn_nofile(int err);
/* Looks name up in parent (whose fd, in use, is pfd), counting one kernel lookup. */
int ws_lookup_in(fuse_ino_t parent, int pfd, const char *name, struct fuse_entry_param *e);
int ws_reopen_flags(int flags);

/* ---- ws_name.c, ws_attr.c: handlers of names and attributes (fuse_lowlevel_ops) ---- */

void ws_name_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void ws_name_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void ws_name_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets);
void ws_name_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);
void ws_name_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void ws_name_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name);
void ws_name_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void ws_name_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void ws_name_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		    const char *newname, unsigned int flags);
void ws_name_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname);
void ws_attr_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ws_attr_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid,
		     struct fuse_file_info *fi);
void ws_attr_readlink(fuse_req_t req, fuse_ino_t ino);
void ws_attr_statfs(fuse_req_t req, fuse_ino_t ino);
void ws_attr_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		      size_t size, int flags);
void ws_attr_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void ws_attr_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void ws_attr_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);
void ws_attr_access(fuse_req_t req, fuse_ino_t ino, int mask);
/* The suid/sgid bits a write by someone without CAP_FSETID clears from mode. */
mode_t ws_attr_sxid_to_kill(mode_t mode);
/* Clears them on fd if the request asked to (killpriv v2); 0 or -errno. */
int ws_attr_kill_suidgid(int fd);

/* ---- ws_file.c, ws_dir.c: handlers of open files and directories (fuse_lowlevel_ops) ---- */

int ws_file_sync_fd(int fd, int datasync);
void ws_file_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ws_file_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		    struct fuse_file_info *fi);
void ws_file_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		  struct fuse_file_info *fi);
void ws_file_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
		       struct fuse_file_info *fi);
void ws_file_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi);
void ws_file_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ws_file_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ws_file_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void ws_file_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
		       struct fuse_file_info *fi);
void ws_file_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			     struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			     struct fuse_file_info *fi_out, size_t len, int flags);
void ws_file_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		   struct fuse_file_info *fi);
void ws_file_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op);
void ws_dir_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ws_dir_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi);
void ws_dir_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi);
void ws_dir_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ws_dir_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);

/* ---- ws_inode.c, ws_budget.c: the inode table and the descriptor budget ---- */

/* Makes the table and the root inode of the backing directory fd (taken); 0 or -errno. */
int ws_inode_open(int fd, const struct stat *st);
void ws_inode_close(void);
struct ws_inode *ws_inode_root(void);
/* The most descriptors the workspace keeps open (inode fds, open files, backing files,
 * directory streams); past it the least recently used inode fds are closed. */
void ws_budget_set(long max);
long ws_budget_max(void);
long ws_budget_fds_open(void);

void ws_inode_lock(void);
void ws_inode_unlock(void);
/* Table lock held: the known inode of (dev, ino), or NULL. */
struct ws_inode *ws_inode_find(dev_t dev, ino_t ino);

/* The inode's fd, reopened if the budget closed it, counted as in use until ws_budget_unuse; -errno
 * (ESTALE: the file it was is gone). */
int ws_budget_use(struct ws_inode *in);
void ws_budget_unuse(struct ws_inode *in);

/* Looks name up in dir (whose fd, in use, is dirfd), counting one kernel lookup; 0 or -errno.
 * Fills e's attributes, inode and, with timeout, its timeouts. */
int ws_inode_lookup(struct ws_inode *dir, int dirfd, const char *name, struct fuse_entry_param *e,
		    double timeout);
/* An inode for the open fd (taken) of an unnamed file in dir; counts one lookup. */
fuse_ino_t ws_inode_ref_fd(struct ws_inode *dir, int fd, const struct stat *st);
/* Counts one more kernel lookup of an inode the kernel already holds (link). */
void ws_inode_ref_again(struct ws_inode *in);
void ws_inode_forget(struct ws_inode *in, uint64_t nlookup);
/* Releases an inode held for a while (in->refs++ under the table lock). */
void ws_inode_drop(struct ws_inode *in);
/* Records that (newdir, newname) now names the inode that was renamed there. */
void ws_inode_renamed(struct ws_inode *newdir, int newdirfd, const char *newname);
/* Table lock held: calls fn on every inode of the table / every file seen with several links. */
void ws_inode_each(void (*fn)(struct ws_inode *in, void *arg), void *arg);
void ws_inode_each_multi(void (*fn)(struct ws_inode *in, void *arg), void *arg);

/* Descriptors that are not inode fds (open files, backing files, directory streams): counted
 * against the budget, making room for them first. */
void ws_budget_fd_opening(void);
void ws_budget_fd_closed(void);

/* The fd of inode ino, in use until put(ino); -errno. */
static inline int use(fuse_ino_t ino)
{
	return ws_budget_use(inode_of(ino));
}

static inline void put(fuse_ino_t ino)
{
	ws_budget_unuse(inode_of(ino));
}

/* ---- ws_inval.c: what the sandbox changes, shown through the mount ---- */

/* Starts the inotify instance; without one nothing the kernel learns is kept (timeouts 0). */
void ws_inval_init(bool cache, double timeout);
/* The session the invalidations go to; registers the core hooks. */
void ws_inval_start(struct fuse_session *se);
/* Any thread: stops reading the queue for good (workspace/ became a kernel mount). */
void ws_inval_off(void);
void ws_inval_stop(void);
/* Table lock held: watches the new directory inode in (wd -1 if it cannot). */
void ws_inval_watch(struct ws_inode *in);
void ws_inval_unwatch(struct ws_inode *in);
/* Table lock held: whether the kernel may keep entries under dir (it is watched). */
bool ws_inval_watched(const struct ws_inode *dir);

/* ---- ws_cred.c: requests run as their caller ---- */

struct ws_cred {
	bool umask_set;
	bool switched;
	mode_t umask;
	bool adopt; /* the caller is the mount owner, mapped: create as root, then hand over */
	uid_t adopt_uid;
	gid_t adopt_gid;
};

void ws_cred_remember_self(void);
void ws_cred_forget_self(void);
bool ws_cred_root(void);
void ws_cred_as_caller(fuse_req_t req, struct ws_cred *c);
void ws_cred_adopt_new(const struct ws_cred *c, int dirfd, const char *name, int fd);
void ws_cred_restore(const struct ws_cred *c);

/* ---- ws_dev.c: below libfuse (passthrough, killpriv v2, O_TMPFILE, readahead) ---- */

/* Whether the INIT reply asked for passthrough / the kernel still takes backing files. */
bool ws_dev_pt_wanted(void);
bool ws_dev_pt_active(void);
/* The INIT reply goes out on this thread next: patch it. */
void ws_dev_patch_init(bool passthrough);
/* The open reply that goes out next on this thread carries backing id id. */
void ws_dev_reply_backing(int id);
/* The request this thread read last asked to kill suid/sgid (killpriv v2); clears it. */
bool ws_dev_take_kill_suidgid(void);
/* The passthrough backing id for an open of in (see ws_dev.c), one more user counted; 0 if
 * none. *rw: whether it serves writes. */
int ws_dev_backing_get(struct ws_inode *in, int flags, bool *rw);
void ws_dev_backing_put(struct ws_inode *in);
void ws_dev_init_done(void);

#endif
