/* The workspace passthrough, everything under MOUNT/workspace/: the handlers of names,
 * attributes, extended attributes and statfs, the helpers all handlers share, the operation
 * table, and the setup. Open files are wsfile.c's, open directories wsdir.c's, the inode table
 * and the descriptor budget wsinode.c's, the coherence with the sandbox's own changes
 * wsinval.c's, the caller's credentials wscred.c's, and what libfuse 3.14 does not know
 * (passthrough, killpriv v2, O_TMPFILE) wsdev.c's.
 *
 * Each inode has an O_PATH|O_NOFOLLOW fd of its backing file and every operation is done
 * relative to such an fd (or through its /proc/self/fd magic link, which names the inode itself
 * and never walks a path), so the daemon never follows a symlink of the workspace out of it.
 * A handler takes the fds it needs with wsn_use (which reopens one the budget closed) and gives
 * them back with wsn_unuse; open files and directories keep their inode's fd in use.
 *
 * File data: when the daemon is root, the kernel reads and writes open files on the backing
 * files itself (FUSE passthrough), sharing the page cache with the sandbox, which writes the
 * backing directory directly. Otherwise data goes through the daemon and the mount's page
 * cache. Either way writes are write-through (no writeback cache: the connection is shared with
 * the control files, whose sizes the kernel must take from us, and it would hide the sandbox's
 * writes; see README, "The workspace"), so every write() reaches the backing file before it
 * returns and close needs no FLUSH (FOPEN_NOFLUSH).
 *
 * Caching (ws_opts.cache): names, attributes, negative entries, data pages, directory listings
 * and symlink targets are kept by the kernel for the timeout, and dropped by wsinval.c when the
 * sandbox changes them; a changed mtime or size also drops the pages (FUSE_CAP_AUTO_INVAL_DATA).
 *
 * The kernel sends FORGET only for an inode it has evicted, i.e. one no request in flight
 * refers to (nor an open file), so handlers use inodes without holding them. */
#include "ws_priv.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "idmap.h"
#include "log.h"
#include "xmalloc.h"

_Static_assert(sizeof(fuse_ino_t) >= sizeof(void *), "inode numbers hold pointers");
_Static_assert(_Alignof(max_align_t) >= 2, "malloc'd inodes must have even addresses");

static struct ws_opts opts;

/* ---- helpers ---- */

/* Attributes as the kernel sees them: owners through the idmap. */
int ws_stat_fd(int fd, struct stat *st)
{
	int res = neg_errno(fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));

	if (res == 0)
		idmap_stat(st);
	return res;
}

/* Whether the kernel may keep what it learns of in (wsinval.c sees its changes). */
bool ws_cacheable(struct ws_inode *in)
{
	return opts.cache && !__atomic_load_n(&in->uncached, __ATOMIC_RELAXED);
}

double ws_attr_timeout(struct ws_inode *in)
{
	return ws_cacheable(in) ? opts.timeout : 0;
}

/* Replies an entry; when the reply does not reach the kernel, its lookup never counted. */
static void reply_entry(fuse_req_t req, const struct fuse_entry_param *e)
{
	if (fuse_reply_entry(req, e) != 0)
		wsn_forget(inode_of(e->ino), 1);
}

void ws_warn_nofile(int err)
{
	static bool warned;

	if ((err == EMFILE || err == ENFILE) &&
	    !__atomic_exchange_n(&warned, true, __ATOMIC_RELAXED))
		log_warnx("workspace: out of file descriptors (budget %ld, %ld open); lower "
			  "[workspace] max_fds or raise the daemon's RLIMIT_NOFILE",
			  wsn_budget(), wsn_fds_open());
}

/* Looks name up in parent (whose fd, in use, is pfd), counting one kernel lookup. */
int ws_lookup_in(fuse_ino_t parent, int pfd, const char *name, struct fuse_entry_param *e)
{
	int res = wsn_lookup(inode_of(parent), pfd, name, e, opts.timeout);

	ws_warn_nofile(-res);
	return res;
}

/* Flags to reopen a file through its magic link: O_NOFOLLOW would refuse the link itself;
 * O_DIRECT is dropped because FUSE direct I/O reaches us with unaligned buffers and offsets
 * (the kernel keeps the caller's O_DIRECT semantics: no page cache on its side). */
int ws_reopen_flags(int flags)
{
	return (flags & ~(O_NOFOLLOW | O_DIRECT | O_CREAT | O_EXCL | O_NOCTTY)) | O_CLOEXEC;
}

/* ---- lookup, forget, attributes ---- */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	(void)conn;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	int pfd = use(parent), res;

	if (pfd < 0) {
		reply_res(req, pfd);
		return;
	}
	res = ws_lookup_in(parent, pfd, name, &e);
	put(parent);
	if (res == -ENOENT && opts.cache) {
		/* A negative entry: ino 0 lets the kernel cache the absence, which wsinval.c
		 * drops when the name appears, if it sees the directory. */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = ws_attr_timeout(inode_of(parent));
		fuse_reply_entry(req, &e);
		return;
	}
	if (res)
		reply_res(req, res);
	else
		reply_entry(req, &e);
}

void ws_forget_one(fuse_ino_t ino, uint64_t nlookup)
{
	wsn_forget(inode_of(ino), nlookup);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	ws_forget_one(ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		ws_forget_one(forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void reply_attr(fuse_req_t req, fuse_ino_t ino, int fd)
{
	struct stat st;
	int res = ws_stat_fd(fd, &st);

	if (res)
		reply_res(req, res);
	else
		fuse_reply_attr(req, &st, ws_attr_timeout(inode_of(ino)));
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int fd = use(ino);

	(void)fi;
	if (fd < 0) {
		reply_res(req, fd);
		return;
	}
	reply_attr(req, ino, fd);
	put(ino);
}

static int set_mode(int fd, mode_t mode)
{
	char p[PROC_FD_LEN];

	return neg_errno(chmod(proc_path(p, fd), mode));
}

static int set_owner(int fd, int valid, const struct stat *attr)
{
	uid_t uid = (valid & FUSE_SET_ATTR_UID) ? idmap_uid(attr->st_uid) : (uid_t)-1;
	gid_t gid = (valid & FUSE_SET_ATTR_GID) ? idmap_gid(attr->st_gid) : (gid_t)-1;

	return neg_errno(fchownat(fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));
}

static int set_size(int fd, struct fuse_file_info *fi, off_t size)
{
	char p[PROC_FD_LEN];

	if (fi)
		return neg_errno(ftruncate(file_fd(fi), size));
	return neg_errno(truncate(proc_path(p, fd), size));
}

/* utimensat with AT_EMPTY_PATH works on the O_PATH fd itself: a symlink's own times. */
static int set_times(int fd, int valid, const struct stat *attr)
{
	struct timespec tv[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_OMIT}};

	if (valid & FUSE_SET_ATTR_ATIME_NOW)
		tv[0].tv_nsec = UTIME_NOW;
	else if (valid & FUSE_SET_ATTR_ATIME)
		tv[0] = attr->st_atim;
	if (valid & FUSE_SET_ATTR_MTIME_NOW)
		tv[1].tv_nsec = UTIME_NOW;
	else if (valid & FUSE_SET_ATTR_MTIME)
		tv[1] = attr->st_mtim;
	return neg_errno(utimensat(fd, "", tv, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));
}

/* Whether a write by someone without CAP_FSETID must clear bits of mode: S_ISUID, and S_ISGID
 * of a group-executable file (a mandatory-locking one keeps it), as the VFS does. */
mode_t ws_sxid_to_kill(mode_t mode)
{
	mode_t kill = mode & S_ISUID;

	if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		kill |= S_ISGID;
	return kill;
}

/* The request asked to kill suid/sgid (killpriv v2): the daemon's own write or truncate would
 * not, having CAP_FSETID. */
int ws_kill_suidgid(int fd)
{
	char p[PROC_FD_LEN];
	struct stat st;
	mode_t kill;

	if (!wsd_take_kill_suidgid())
		return 0;
	if (ws_stat_fd(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return 0;
	kill = ws_sxid_to_kill(st.st_mode);
	if (!kill)
		return 0;
	return neg_errno(chmod(proc_path(p, fd), st.st_mode & 07777 & ~kill));
}

/* fi, when given, is an open regular file being truncated (ftruncate, O_TRUNC); everything
 * else goes through the inode fd, which is also right for directories and symlinks. The kernel
 * has checked the caller's rights. */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid,
		       struct fuse_file_info *fi)
{
	int fd = use(ino), res = 0;

	if (fd < 0) {
		reply_res(req, fd);
		return;
	}
	if (valid & FUSE_SET_ATTR_MODE)
		res = set_mode(fd, attr->st_mode);
	if (!res && (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
		res = set_owner(fd, valid, attr);
	if (!res && (valid & FUSE_SET_ATTR_SIZE))
		res = set_size(fd, fi, attr->st_size);
	if (!res && (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
			      FUSE_SET_ATTR_MTIME_NOW)))
		res = set_times(fd, valid, attr);
	if (!res)
		res = ws_kill_suidgid(fd);
	if (res)
		reply_res(req, res);
	else
		reply_attr(req, ino, fd);
	put(ino);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[PATH_MAX + 1];
	int fd = use(ino);
	ssize_t n;

	if (fd < 0) {
		reply_res(req, fd);
		return;
	}
	n = readlinkat(fd, "", buf, sizeof(buf));
	put(ino);
	if (n == -1) {
		fuse_reply_err(req, errno);
		return;
	}
	if ((size_t)n == sizeof(buf)) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	buf[n] = '\0';
	fuse_reply_readlink(req, buf);
}

/* ---- directory entries ---- */

/* Replies the entry of a name just made under parent (fd pfd), or the error res of making
 * it; gives pfd back. */
static void reply_made(fuse_req_t req, fuse_ino_t parent, int pfd, const char *name, int res)
{
	struct fuse_entry_param e;

	if (!res)
		res = ws_lookup_in(parent, pfd, name, &e);
	put(parent);
	if (res)
		reply_res(req, res);
	else
		reply_entry(req, &e);
}

enum make_kind { MAKE_NODE, MAKE_DIR, MAKE_SYMLINK };

static void make(fuse_req_t req, fuse_ino_t parent, const char *name, enum make_kind kind,
		 mode_t mode, dev_t rdev, const char *link)
{
	struct ws_cred c;
	int pfd = use(parent), res;

	if (pfd < 0) {
		reply_res(req, pfd);
		return;
	}
	wsc_as_caller(req, &c);
	if (kind == MAKE_NODE)
		res = neg_errno(mknodat(pfd, name, mode, rdev));
	else if (kind == MAKE_DIR)
		res = neg_errno(mkdirat(pfd, name, mode));
	else
		res = neg_errno(symlinkat(link, pfd, name));
	if (!res)
		wsc_adopt_new(&c, pfd, name, -1);
	wsc_restore(&c);
	reply_made(req, parent, pfd, name, res);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	make(req, parent, name, MAKE_NODE, mode, rdev, NULL);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	make(req, parent, name, MAKE_DIR, mode, 0, NULL);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	make(req, parent, name, MAKE_SYMLINK, 0, 0, link);
}

static void remove_entry(fuse_req_t req, fuse_ino_t parent, const char *name, int flags)
{
	int pfd = use(parent);

	if (pfd < 0) {
		reply_res(req, pfd);
		return;
	}
	reply_res(req, neg_errno(unlinkat(pfd, name, flags)));
	put(parent);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, 0);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, AT_REMOVEDIR);
}

/* The moved inodes' names are recorded: the budget may have to reopen them by name. */
static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	int pfd = use(parent), nfd = pfd < 0 ? pfd : use(newparent), res;

	if (pfd < 0 || nfd < 0) {
		if (pfd >= 0)
			put(parent);
		reply_res(req, pfd < 0 ? pfd : nfd);
		return;
	}
	res = neg_errno(renameat2(pfd, name, nfd, newname, flags));
	if (!res) {
		wsn_renamed(inode_of(newparent), nfd, newname);
		if (flags & RENAME_EXCHANGE)
			wsn_renamed(inode_of(parent), pfd, name);
	}
	put(newparent);
	put(parent);
	reply_res(req, res);
}

/* linkat(AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH (ENOENT without it, and as a caller other
 * than root); the magic link with AT_SYMLINK_FOLLOW reaches the same inode, a symlink or an
 * O_TMPFILE file included, without it. */
static int link_inode(int fd, int newdir, const char *newname)
{
	char p[PROC_FD_LEN];

	if (linkat(fd, "", newdir, newname, AT_EMPTY_PATH) == 0)
		return 0;
	if (errno != ENOENT)
		return -errno;
	return neg_errno(linkat(AT_FDCWD, proc_path(p, fd), newdir, newname, AT_SYMLINK_FOLLOW));
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct fuse_entry_param e;
	struct ws_cred c;
	int fd = use(ino), nfd = fd < 0 ? fd : use(newparent), res;

	if (fd < 0 || nfd < 0) {
		if (fd >= 0)
			put(ino);
		reply_res(req, fd < 0 ? fd : nfd);
		return;
	}
	wsc_as_caller(req, &c);
	res = link_inode(fd, nfd, newname);
	wsc_restore(&c);
	memset(&e, 0, sizeof(e));
	if (!res)
		res = ws_stat_fd(fd, &e.attr);
	if (!res)
		wsn_renamed(inode_of(newparent), nfd, newname);
	put(newparent);
	put(ino);
	if (res) {
		reply_res(req, res);
		return;
	}
	e.ino = ino;
	e.attr_timeout = e.entry_timeout = ws_attr_timeout(inode_of(ino));
	wsn_ref_again(inode_of(ino));
	reply_entry(req, &e);
}

/* ---- file system, xattrs, access ---- */

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st;
	int fd = use(ino), rc;

	if (fd < 0) {
		reply_res(req, fd);
		return;
	}
	rc = fstatvfs(fd, &st);
	put(ino);
	if (rc == -1)
		fuse_reply_err(req, errno);
	else
		fuse_reply_statfs(req, &st);
}

/* xattr calls cannot take O_PATH fds; the following variants on the magic link reach the
 * inode itself (for a symlink, the link and not its target: l* would name the magic link). */
static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	char p[PROC_FD_LEN];
	int fd = use(ino);

	if (fd < 0) {
		reply_res(req, fd);
		return;
	}
	reply_res(req, neg_errno(setxattr(proc_path(p, fd), name, value, size, flags)));
	put(ino);
}

/* Replies the outcome of a getxattr/listxattr-style call that filled buf (size 0: asked
 * for the size only). */
static void reply_xattr_res(fuse_req_t req, ssize_t n, const char *buf, size_t size)
{
	if (n == -1)
		fuse_reply_err(req, errno);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	char p[PROC_FD_LEN], *buf;
	int fd = use(ino);
	ssize_t n;

	if (fd < 0) {
		reply_res(req, fd);
		return;
	}
	buf = size ? xmalloc(size) : NULL;
	n = getxattr(proc_path(p, fd), name, buf, size);
	reply_xattr_res(req, n, buf, size);
	put(ino);
	free(buf);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char p[PROC_FD_LEN], *buf;
	int fd = use(ino);
	ssize_t n;

	if (fd < 0) {
		reply_res(req, fd);
		return;
	}
	buf = size ? xmalloc(size) : NULL;
	n = listxattr(proc_path(p, fd), buf, size);
	reply_xattr_res(req, n, buf, size);
	put(ino);
	free(buf);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	char p[PROC_FD_LEN];
	int fd = use(ino);

	if (fd < 0) {
		reply_res(req, fd);
		return;
	}
	reply_res(req, neg_errno(removexattr(proc_path(p, fd), name)));
	put(ino);
}

/* Checked as the daemon; only reached when the mount lacks default_permissions. */
static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	char p[PROC_FD_LEN];
	int fd = use(ino);

	if (fd < 0) {
		reply_res(req, fd);
		return;
	}
	reply_res(req, neg_errno(faccessat(AT_FDCWD, proc_path(p, fd), mask, 0)));
	put(ino);
}

/* getlk/setlk stay NULL: POSIX locks are the kernel's own (see ws_init_conn). */
const struct fuse_lowlevel_ops ws_ops = {
    .init = op_init,
    .lookup = op_lookup,
    .forget = op_forget,
    .forget_multi = op_forget_multi,
    .getattr = op_getattr,
    .setattr = op_setattr,
    .readlink = op_readlink,
    .mknod = op_mknod,
    .mkdir = op_mkdir,
    .unlink = op_unlink,
    .rmdir = op_rmdir,
    .symlink = op_symlink,
    .rename = op_rename,
    .link = op_link,
    .open = wsf_open,
    .read = wsf_read,
    .write = wsf_write,
    .write_buf = wsf_write_buf,
    .flush = wsf_flush,
    .release = wsf_release,
    .fsync = wsf_fsync,
    .opendir = wsdir_opendir,
    .readdir = wsdir_readdir,
    .readdirplus = wsdir_readdirplus,
    .releasedir = wsdir_releasedir,
    .fsyncdir = wsdir_fsyncdir,
    .statfs = op_statfs,
    .setxattr = op_setxattr,
    .getxattr = op_getxattr,
    .listxattr = op_listxattr,
    .removexattr = op_removexattr,
    .access = op_access,
    .create = wsf_create,
    .flock = wsf_flock,
    .fallocate = wsf_fallocate,
    .copy_file_range = wsf_copy_file_range,
    .lseek = wsf_lseek,
};

/* ---- setup ---- */

void ws_init_conn(struct fuse_conn_info *conn)
{
	unsigned int want = FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE | FUSE_CAP_FLOCK_LOCKS |
			    FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO |
			    FUSE_CAP_AUTO_INVAL_DATA | FUSE_CAP_DONT_MASK | FUSE_CAP_ASYNC_READ |
			    FUSE_CAP_ASYNC_DIO | FUSE_CAP_PARALLEL_DIROPS | FUSE_CAP_ATOMIC_O_TRUNC;

	if (opts.cache)
		want |= FUSE_CAP_CACHE_SYMLINKS;
	conn->want |= want & conn->capable;
	/* No writeback cache (the kernel would own sizes and mtimes of every regular file: the
	 * control files' and those the sandbox changes directly), no NFS export (lookups of ".."
	 * would leave the workspace), no fs-side suid clearing, kernel-local POSIX locks, no
	 * splice from the device (the TMPFILE hook reads requests itself; see wsdev.c). */
	conn->want &= ~(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_EXPORT_SUPPORT |
			FUSE_CAP_HANDLE_KILLPRIV | FUSE_CAP_POSIX_LOCKS);
	conn->want &= ~FUSE_CAP_SPLICE_READ;
	/* The INIT reply goes out on this thread right after we return. */
	wsd_patch_init(wsc_root() && opts.passthrough);
	/* Readahead and async reads: more requests in flight than the default 12. */
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	conn->max_readahead = UINT_MAX; /* as much as the kernel offers */
	wsd_init_done();
}

/* The workspace's share of the open file limit; the rest is the control plane's. */
static void set_budget(void)
{
	struct rlimit rl;
	long max = (long)opts.max_fds;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return;
	if (max == 0 || (rlim_t)max > rl.rlim_cur - rl.rlim_cur / 4)
		max = (long)(max == 0 ? rl.rlim_cur / 2 : rl.rlim_cur - rl.rlim_cur / 4);
	if (max < 64)
		max = 64;
	wsn_set_budget(max);
	log_debug("workspace: at most %ld descriptors", max);
}

void ws_raise_nofile(void)
{
	struct rlimit rl;
	unsigned long nr_open = 0;
	FILE *f;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return;
	f = fopen("/proc/sys/fs/nr_open", "re");
	if (f) {
		if (fscanf(f, "%lu", &nr_open) != 1)
			nr_open = 0;
		fclose(f);
	}
	if (nr_open > rl.rlim_max) {
		struct rlimit more = {nr_open, nr_open};

		if (setrlimit(RLIMIT_NOFILE, &more) == 0) {
			set_budget();
			return;
		}
	}
	if (rl.rlim_cur != rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
			log_warn("workspace: setrlimit RLIMIT_NOFILE");
	}
	set_budget();
}

/* ---- open, close ---- */

int ws_open(const char *dir, const struct ws_opts *o)
{
	struct stat st;
	int fd, res;

	opts = *o;
	if (!opts.cache)
		opts.timeout = 0;
	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1 || fstat(fd, &st) == -1) {
		res = -errno;
		log_warn("workspace: %s", dir);
		if (fd != -1)
			close(fd);
		return res;
	}
	wsc_remember_self();
	wsi_init(opts.cache, opts.timeout);
	return wsn_open(fd, &st);
}

void ws_kernel_mounted(void)
{
	wsi_off();
}

void ws_close(void)
{
	wsn_close();
	wsi_stop();
	wsc_forget_self();
}

/* The name "workspace" always means the root: the kernel keeps it for good (its attributes
 * follow the cache settings like any other's). A failed revalidation would make the kernel
 * detach the workspace mounted on it (wsmount.h), so it never has to be revalidated. */
#define ROOT_ENTRY_TIMEOUT 1e9

int ws_root_entry(struct fuse_entry_param *e)
{
	struct ws_inode *root = wsn_root();
	int res;

	memset(e, 0, sizeof(*e));
	e->attr_timeout = ws_attr_timeout(root);
	e->entry_timeout = ROOT_ENTRY_TIMEOUT;
	res = ws_stat_fd(root->fd, &e->attr);
	if (res)
		return res;
	e->ino = ino_of(root);
	wsn_ref_again(root);
	return 0;
}

fuse_ino_t ws_root_ino(void)
{
	return ino_of(wsn_root());
}
