/* The workspace passthrough: the FUSE handlers of everything under MOUNT/workspace/, and its
 * setup. The inode table and the descriptor budget are wsinode.c's, the coherence with the
 * sandbox's own changes wsinval.c's, the caller's credentials wscred.c's, and what libfuse 3.14
 * does not know (passthrough, killpriv v2, O_TMPFILE) wsdev.c's.
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

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "idmap.h"
#include "log.h"
#include "xmalloc.h"

_Static_assert(sizeof(fuse_ino_t) >= sizeof(void *), "inode numbers hold pointers");
_Static_assert(_Alignof(max_align_t) >= 2, "malloc'd inodes must have even addresses");

/* An open directory; it keeps its inode's fd in use. */
struct ws_dir {
	pthread_mutex_t lock;
	struct ws_inode *in;
	DIR *dp; /* opened at the first readdir: with cached listings there may be none */
	off_t offset;		/* d_off of the last entry handed out: where dp stands */
	struct dirent *pending; /* read from dp but not yet handed out (buffer was full) */
};

static struct ws_opts opts;

/* ---- helpers ---- */

#define PROC_FD_LEN 32

/* The magic link naming the inode behind fd: opening or following it reaches that inode
 * itself (a symlink included, which is not followed further), never a path. */
static const char *proc_path(char buf[PROC_FD_LEN], int fd)
{
	snprintf(buf, PROC_FD_LEN, "/proc/self/fd/%d", fd);
	return buf;
}

static int neg_errno(int res)
{
	return res == -1 ? -errno : 0;
}

static void reply_res(fuse_req_t req, int res)
{
	fuse_reply_err(req, -res);
}

/* The fd of inode ino, in use until put(ino); -errno. */
static int use(fuse_ino_t ino)
{
	return wsn_use(inode_of(ino));
}

static void put(fuse_ino_t ino)
{
	wsn_unuse(inode_of(ino));
}

static struct ws_file *file_of(struct fuse_file_info *fi)
{
	return (struct ws_file *)(uintptr_t)fi->fh;
}

static int file_fd(struct fuse_file_info *fi)
{
	return file_of(fi)->fd;
}

/* Attributes as the kernel sees them: owners through the idmap. */
static int stat_fd(int fd, struct stat *st)
{
	int res = neg_errno(fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));

	if (res == 0)
		idmap_stat(st);
	return res;
}

/* Whether the kernel may keep what it learns of in (wsinval.c sees its changes). */
static bool cacheable(struct ws_inode *in)
{
	return opts.cache && !__atomic_load_n(&in->uncached, __ATOMIC_RELAXED);
}

static double attr_timeout(struct ws_inode *in)
{
	return cacheable(in) ? opts.timeout : 0;
}

/* Replies an entry; when the reply does not reach the kernel, its lookup never counted. */
static void reply_entry(fuse_req_t req, const struct fuse_entry_param *e)
{
	if (fuse_reply_entry(req, e) != 0)
		wsn_forget(inode_of(e->ino), 1);
}

static void warn_nofile(int err)
{
	static bool warned;

	if ((err == EMFILE || err == ENFILE) && !__atomic_exchange_n(&warned, true, __ATOMIC_RELAXED))
		log_warnx("workspace: out of file descriptors (budget %ld, %ld open); lower "
			  "[workspace] max_fds or raise the daemon's RLIMIT_NOFILE",
			  wsn_budget(), wsn_fds_open());
}

/* Looks name up in parent (whose fd, in use, is pfd), counting one kernel lookup. */
static int lookup_in(fuse_ino_t parent, int pfd, const char *name, struct fuse_entry_param *e)
{
	int res = wsn_lookup(inode_of(parent), pfd, name, e, opts.timeout);

	warn_nofile(-res);
	return res;
}

/* Flags to reopen a file through its magic link: O_NOFOLLOW would refuse the link itself;
 * O_DIRECT is dropped because FUSE direct I/O reaches us with unaligned buffers and offsets
 * (the kernel keeps the caller's O_DIRECT semantics: no page cache on its side). */
static int reopen_flags(int flags)
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
	res = lookup_in(parent, pfd, name, &e);
	put(parent);
	if (res == -ENOENT && opts.cache) {
		/* A negative entry: ino 0 lets the kernel cache the absence, which wsinval.c
		 * drops when the name appears, if it sees the directory. */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = attr_timeout(inode_of(parent));
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
	int res = stat_fd(fd, &st);

	if (res)
		reply_res(req, res);
	else
		fuse_reply_attr(req, &st, attr_timeout(inode_of(ino)));
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
static mode_t sxid_to_kill(mode_t mode)
{
	mode_t kill = mode & S_ISUID;

	if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		kill |= S_ISGID;
	return kill;
}

/* The request asked to kill suid/sgid (killpriv v2): the daemon's own write or truncate would
 * not, having CAP_FSETID. */
static int kill_suidgid(int fd)
{
	char p[PROC_FD_LEN];
	struct stat st;
	mode_t kill;

	if (!wsd_take_kill_suidgid())
		return 0;
	if (stat_fd(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return 0;
	kill = sxid_to_kill(st.st_mode);
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
		res = kill_suidgid(fd);
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
		res = lookup_in(parent, pfd, name, &e);
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
		res = stat_fd(fd, &e.attr);
	if (!res)
		wsn_renamed(inode_of(newparent), nfd, newname);
	put(newparent);
	put(ino);
	if (res) {
		reply_res(req, res);
		return;
	}
	e.ino = ino;
	e.attr_timeout = e.entry_timeout = attr_timeout(inode_of(ino));
	wsn_ref_again(inode_of(ino));
	reply_entry(req, &e);
}

/* ---- files ---- */

/* A passthrough write would not clear suid/sgid (the kernel leaves it to us with killpriv v2,
 * and the backing write runs with the daemon's CAP_FSETID), so such files are written through
 * the daemon, which sees FUSE_WRITE_KILL_SUIDGID. */
static bool writes_need_kill(int fd, int flags)
{
	struct stat st;

	return (flags & O_ACCMODE) != O_RDONLY && fstat(fd, &st) == 0 && sxid_to_kill(st.st_mode);
}

/* Closes an open file: its fd (dropping a flock() taken through it), its share of the backing
 * file, and the use of its inode's fd. */
static void file_free(struct ws_file *f, struct ws_inode *in)
{
	if (f->pt)
		wsd_backing_put(f->pt);
	close(f->fd);
	wsn_fd_closed();
	wsn_unuse(in);
	free(f);
}

/* Replies an open or create of the backing fd (taken, counted, as is a use of in's fd) with
 * the kernel's caching mode: passthrough (reads, writes and mmap go to the backing file in the
 * kernel, no FUSE page cache) when the connection has it, else the FUSE page cache (kept with
 * ws_opts.cache). Some opens need their reads and writes to come to the daemon instead (direct
 * I/O): O_DIRECT ones, whose unaligned buffers the backing file would refuse, writers of
 * suid/sgid files (killpriv), and writers sharing a read-only backing file; with passthrough
 * they are passthrough and direct I/O at once (the kernel then only maps through the backing
 * file). Returns what fuse_reply_open/create returned. */
static int reply_opened(fuse_req_t req, struct ws_inode *in, struct fuse_file_info *fi, int fd,
			const struct fuse_entry_param *e)
{
	struct ws_file *f = xcalloc(1, sizeof(*f));
	bool write = (fi->flags & O_ACCMODE) != O_RDONLY, rw = false;
	int rc, id;

	f->fd = fd;
	fi->fh = (uint64_t)(uintptr_t)f;
	/* Writes are write-through, so close has nothing to flush: skip the FLUSH round trip.
	 * (POSIX locks are the kernel's, released by the kernel at close.) */
	fi->noflush = 1;
	fi->direct_io = (fi->flags & O_DIRECT) != 0;
	if (wsd_pt_wanted()) {
		/* An inode that has a backing file keeps it even if the kernel stopped taking
		 * new ones: all its opens must name it. */
		id = wsd_backing_get(in, fi->flags, &rw);
		if (id > 0) {
			f->pt = in;
			wsd_reply_backing(id);
			if ((write && !rw) || writes_need_kill(fd, fi->flags))
				fi->direct_io = 1;
		} else if (wsd_pt_active()) {
			/* This file could not be registered (ELOOP, EMFILE...). Direct I/O takes no
			 * inode I/O mode, so it fits later passthrough opens of the inode. */
			fi->direct_io = 1;
		}
	}
	if (!fi->direct_io && !f->pt) {
		/* Without caching, pages are dropped at each open (close-to-open consistency); with
		 * it, the kernel drops them itself when a revalidation finds another mtime or size,
		 * or wsinval.c when the sandbox writes the file. */
		fi->keep_cache = cacheable(in);
	}
	rc = e ? fuse_reply_create(req, e, fi) : fuse_reply_open(req, fi);
	wsd_reply_backing(0);
	if (rc != 0)
		file_free(f, in);
	return rc;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char p[PROC_FD_LEN];
	int ifd = use(ino), fd;

	if (ifd < 0) {
		reply_res(req, ifd);
		return;
	}
	wsn_fd_opening();
	fd = open(proc_path(p, ifd), reopen_flags(fi->flags));
	if (fd == -1) {
		int err = errno;

		wsn_fd_closed();
		put(ino);
		warn_nofile(err);
		fuse_reply_err(req, err);
		return;
	}
	kill_suidgid(fd); /* O_TRUNC */
	reply_opened(req, inode_of(ino), fi, fd, NULL);
}

/* The name the create handler gets for an O_TMPFILE open (see wsdev.c): the kernel names the
 * unnamed file "/", which no real name can be. */
static bool is_tmpfile_name(const char *name)
{
	return name[0] == '/' && name[1] == '\0';
}

/* An unnamed file in parent (fd pfd): its inode fd is an O_PATH reopen of the open file. */
static int create_tmpfile(fuse_ino_t parent, int pfd, int flags, mode_t mode, int *fdp,
			  struct fuse_entry_param *e)
{
	char p[PROC_FD_LEN];
	int fd, ifd, res;

	memset(e, 0, sizeof(*e));
	fd = openat(pfd, ".", (flags & ~(O_CREAT | O_EXCL | O_DIRECT)) | O_CLOEXEC, mode);
	if (fd == -1)
		return -errno;
	ifd = open(proc_path(p, fd), O_PATH | O_CLOEXEC);
	if (ifd == -1 || (res = stat_fd(ifd, &e->attr)) != 0) {
		res = -errno;
		if (ifd != -1)
			close(ifd);
		close(fd);
		return res;
	}
	e->ino = wsn_ref_fd(inode_of(parent), ifd, &e->attr);
	e->attr_timeout = e->entry_timeout = attr_timeout(inode_of(e->ino));
	*fdp = fd;
	return 0;
}

/* O_NOFOLLOW: the kernel resolved the name as absent, so if it is a symlink now (made in the
 * backing dir meanwhile) refuse it rather than create wherever it points. */
static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	struct ws_cred c;
	int fd = -1, flags = (fi->flags & ~(O_DIRECT | O_NOCTTY)) | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
	int pfd = use(parent), ifd;
	bool existed;
	int res;

	if (pfd < 0) {
		reply_res(req, pfd);
		return;
	}
	wsn_fd_opening();
	wsc_as_caller(req, &c);
	if (is_tmpfile_name(name)) {
		res = create_tmpfile(parent, pfd, fi->flags, mode, &fd, &e);
		existed = false;
	} else {
		existed = c.adopt && faccessat(pfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
		fd = openat(pfd, name, flags, mode);
		res = fd == -1 ? -errno : 0;
	}
	if (!res && !existed) {
		wsc_adopt_new(&c, pfd, name, fd);
		if (c.adopt && is_tmpfile_name(name))
			stat_fd(fd, &e.attr); /* the owner it was given */
	}
	wsc_restore(&c);
	if (!res)
		kill_suidgid(fd); /* an existing file truncated */
	if (!res && !is_tmpfile_name(name))
		res = lookup_in(parent, pfd, name, &e);
	put(parent);
	ifd = res ? res : use(e.ino);
	if (ifd < 0) {
		warn_nofile(-ifd);
		if (!res)
			wsn_forget(inode_of(e.ino), 1);
		if (fd != -1)
			close(fd);
		wsn_fd_closed();
		reply_res(req, ifd);
		return;
	}
	if (reply_opened(req, inode_of(e.ino), fi, fd, &e) != 0)
		wsn_forget(inode_of(e.ino), 1);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);

	(void)ino;
	buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	buf.buf[0].fd = file_fd(fi);
	buf.buf[0].pos = off;
	fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE); /* replies the error itself */
}

static void op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
			 struct fuse_file_info *fi)
{
	struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in));
	ssize_t n;

	(void)ino;
	kill_suidgid(file_fd(fi));
	if (in->count == 1 && !(in->buf[0].flags & FUSE_BUF_IS_FD)) {
		n = pwrite(file_fd(fi), in->buf[0].mem, in->buf[0].size, off);
		if (n == -1)
			fuse_reply_err(req, errno);
		else
			fuse_reply_write(req, (size_t)n);
		return;
	}
	out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	out.buf[0].fd = file_fd(fi);
	out.buf[0].pos = off;
	n = fuse_buf_copy(&out, in, FUSE_BUF_SPLICE_MOVE);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

/* Only used if the dispatcher has no write_buf; same as above from memory. */
static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	ssize_t n;

	(void)ino;
	kill_suidgid(file_fd(fi));
	n = pwrite(file_fd(fi), buf, size, off);
	if (n == -1)
		fuse_reply_err(req, errno);
	else
		fuse_reply_write(req, (size_t)n);
}

/* Not sent while opens say noflush; kept for a kernel that sends it anyway. Closing a
 * duplicate reports deferred write errors (NFS etc.) without closing fh. */
static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int dup = fcntl(file_fd(fi), F_DUPFD_CLOEXEC, 0);

	(void)ino;
	if (dup == -1)
		fuse_reply_err(req, errno);
	else
		reply_res(req, neg_errno(close(dup)));
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	file_free(file_of(fi), inode_of(ino));
	fuse_reply_err(req, 0);
}

static int sync_fd(int fd, int datasync)
{
	return neg_errno(datasync ? fdatasync(fd) : fsync(fd));
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	reply_res(req, sync_fd(file_fd(fi), datasync));
}

/* Every mode goes to the backing filesystem; the kernel itself refuses the modes FUSE has no
 * page cache handling for (collapse and insert range) before they get here. */
static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
			 struct fuse_file_info *fi)
{
	(void)ino;
	reply_res(req, neg_errno(fallocate(file_fd(fi), mode, offset, length)));
}

static void op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			       struct fuse_file_info *fi_out, size_t len, int flags)
{
	ssize_t n;

	(void)ino_in;
	(void)ino_out;
	n = copy_file_range(file_fd(fi_in), &off_in, file_fd(fi_out), &off_out, len,
			    (unsigned int)flags);
	if (n == -1)
		fuse_reply_err(req, errno);
	else
		fuse_reply_write(req, (size_t)n);
}

static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	off_t res = lseek(file_fd(fi), off, whence);

	(void)ino;
	if (res == -1)
		fuse_reply_err(req, errno);
	else
		fuse_reply_lseek(req, res);
}

/* flock() on fh, which is one open file description per open of the mount, as flock wants,
 * and which a sandbox process's flock() on the backing file sees. A blocking request polls with
 * LOCK_NB (what a blocking flock does to an upgraded lock meanwhile is the same: the old lock
 * is gone while it waits) so that an interrupt (Ctrl-C) can end it with EINTR. */
static void op_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	struct timespec delay = {0, 250 * 1000};
	int fd = file_fd(fi);

	(void)ino;
	if ((op & LOCK_NB) || (op & LOCK_UN)) {
		reply_res(req, neg_errno(flock(fd, op)));
		return;
	}
	for (;;) {
		if (flock(fd, op | LOCK_NB) == 0) {
			fuse_reply_err(req, 0);
			return;
		}
		if (errno != EWOULDBLOCK && errno != EINTR) {
			fuse_reply_err(req, errno);
			return;
		}
		if (fuse_req_interrupted(req)) {
			fuse_reply_err(req, EINTR);
			return;
		}
		nanosleep(&delay, NULL);
		if (delay.tv_nsec < 16 * 1000 * 1000)
			delay.tv_nsec *= 2;
	}
}

/* ---- directories ---- */

static struct ws_dir *dir_of(struct fuse_file_info *fi)
{
	return (struct ws_dir *)(uintptr_t)fi->fh;
}

static void dir_free(struct ws_dir *d)
{
	if (d->dp) {
		closedir(d->dp);
		wsn_fd_closed();
	}
	wsn_unuse(d->in);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* Opens the directory stream of d if it is not yet; 0 or -errno. Under d->lock. */
static int dir_open_stream(struct ws_dir *d)
{
	int fd;

	if (d->dp)
		return 0;
	wsn_fd_opening();
	fd = openat(d->in->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1) {
		int res = -errno;

		wsn_fd_closed();
		warn_nofile(-res);
		return res;
	}
	d->dp = fdopendir(fd);
	if (!d->dp) {
		int res = -errno;

		close(fd);
		wsn_fd_closed();
		return res;
	}
	d->offset = 0;
	return 0;
}

/* The kernel has checked the caller's right to read the directory; the daemon reads it at
 * the first READDIR, which does not come while the kernel serves the listing from its cache
 * (a warm `find` or `git status` costs one OPENDIR per directory, and no more). */
static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ws_dir *d;
	int fd = use(ino);

	if (fd < 0) {
		reply_res(req, fd);
		return;
	}
	d = xcalloc(1, sizeof(*d));
	pthread_mutex_init(&d->lock, NULL);
	d->in = inode_of(ino);
	fi->fh = (uint64_t)(uintptr_t)d;
	/* The kernel may keep the listing; with auto_inval_data it drops it when a revalidation
	 * finds the directory's mtime changed, and wsinval.c when the sandbox changes it. */
	fi->keep_cache = cacheable(d->in);
	fi->cache_readdir = cacheable(d->in);
	if (fuse_reply_open(req, fi) != 0)
		dir_free(d);
}

static bool is_dot(const char *name)
{
	return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/* Adds one entry at p (rem bytes left). Returns the bytes used, 0 when it does not fit (the
 * entry stays pending), -ENOENT when it vanished (skip it), or another -errno. A plus entry
 * counts a lookup, given back when the entry does not fit; "." and ".." carry no inode. */
static ssize_t dir_add(fuse_req_t req, struct ws_dir *d, char *p, size_t rem,
		       const struct dirent *de, bool plus)
{
	struct fuse_entry_param e;
	size_t n;
	int res;

	if (!plus) {
		struct stat st = {.st_ino = de->d_ino, .st_mode = (mode_t)de->d_type << 12};

		n = fuse_add_direntry(req, p, rem, de->d_name, &st, de->d_off);
		return n > rem ? 0 : (ssize_t)n;
	}
	if (is_dot(de->d_name)) {
		memset(&e, 0, sizeof(e));
		e.attr.st_ino = de->d_ino;
		e.attr.st_mode = (mode_t)de->d_type << 12;
		n = fuse_add_direntry_plus(req, p, rem, de->d_name, &e, de->d_off);
		return n > rem ? 0 : (ssize_t)n;
	}
	/* Measure first: a lookup is counted only for an entry that goes out. */
	memset(&e, 0, sizeof(e));
	n = fuse_add_direntry_plus(req, NULL, 0, de->d_name, &e, de->d_off);
	if (n > rem)
		return 0;
	res = lookup_in(ino_of(d->in), dirfd(d->dp), de->d_name, &e);
	if (res)
		return res;
	return (ssize_t)fuse_add_direntry_plus(req, p, rem, de->d_name, &e, de->d_off);
}

/* Fills buf from d at off; returns the bytes filled, or -errno if none were. */
static ssize_t dir_fill(fuse_req_t req, struct ws_dir *d, char *buf, size_t size, off_t off,
			bool plus)
{
	size_t used = 0;
	ssize_t n = dir_open_stream(d);

	if (n < 0)
		return n;
	if (off != d->offset) {
		seekdir(d->dp, off);
		d->offset = off;
		d->pending = NULL;
	}
	for (;;) {
		struct dirent *de = d->pending;

		if (!de) {
			errno = 0;
			de = readdir(d->dp);
			if (!de) {
				n = -errno;
				break;
			}
		}
		d->pending = de;
		n = dir_add(req, d, buf + used, size - used, de, plus);
		if (n <= 0 && n != -ENOENT)
			break;
		used += n > 0 ? (size_t)n : 0;
		d->offset = de->d_off;
		d->pending = NULL;
	}
	return used > 0 || n >= 0 ? (ssize_t)used : n;
}

static void readdir_common(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi,
			   bool plus)
{
	struct ws_dir *d = dir_of(fi);
	char *buf = xmalloc(size);
	ssize_t n;

	pthread_mutex_lock(&d->lock);
	n = dir_fill(req, d, buf, size, off, plus);
	pthread_mutex_unlock(&d->lock);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)ino;
	readdir_common(req, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	(void)ino;
	readdir_common(req, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	dir_free(dir_of(fi));
	fuse_reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct ws_dir *d = dir_of(fi);
	int fd = openat(d->in->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), res;

	(void)ino;
	if (fd == -1) {
		fuse_reply_err(req, errno);
		return;
	}
	res = sync_fd(fd, datasync);
	close(fd);
	reply_res(req, res);
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
    .open = op_open,
    .read = op_read,
    .write = op_write,
    .write_buf = op_write_buf,
    .flush = op_flush,
    .release = op_release,
    .fsync = op_fsync,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .readdirplus = op_readdirplus,
    .releasedir = op_releasedir,
    .fsyncdir = op_fsyncdir,
    .statfs = op_statfs,
    .setxattr = op_setxattr,
    .getxattr = op_getxattr,
    .listxattr = op_listxattr,
    .removexattr = op_removexattr,
    .access = op_access,
    .create = op_create,
    .flock = op_flock,
    .fallocate = op_fallocate,
    .copy_file_range = op_copy_file_range,
    .lseek = op_lseek,
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

void ws_close(void)
{
	wsn_close();
	wsi_stop();
	wsc_forget_self();
}

/* The name "workspace" always means the root: the kernel may keep it (its attributes follow
 * the cache settings like any other's). */
#define ROOT_ENTRY_TIMEOUT 3600.0

int ws_root_entry(struct fuse_entry_param *e)
{
	struct ws_inode *root = wsn_root();
	int res;

	memset(e, 0, sizeof(*e));
	e->attr_timeout = attr_timeout(root);
	e->entry_timeout = ROOT_ENTRY_TIMEOUT;
	res = stat_fd(root->fd, &e->attr);
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
