/* The workspace passthrough: everything under MOUNT/workspace/. Owns the inode table (backing
 * (st_dev, st_ino) -> struct ws_inode, whose address is the FUSE inode number), the open file
 * and directory handles, and the per-request credential switch used when creating files.
 *
 * Each inode holds an O_PATH|O_NOFOLLOW fd of its backing file and every operation is done
 * relative to such an fd (or through its /proc/self/fd magic link, which names the inode itself
 * and never walks a path), so the daemon never follows a symlink of the workspace out of it.
 *
 * Concurrency: tab.lock guards the hash table and every nlookup count; an inode is freed only
 * when its nlookup reaches zero under that lock (the root is pinned and never freed). The kernel
 * sends FORGET only for an inode it has evicted, i.e. one no request in flight refers to, so
 * operations use inode fds without taking references. File handles are plain fds; directory
 * handles carry their own lock. */
#include "workspace.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/fsuid.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "log.h"
#include "xmalloc.h"

_Static_assert(sizeof(fuse_ino_t) >= sizeof(void *), "inode numbers hold pointers");
_Static_assert(_Alignof(max_align_t) >= 2, "malloc'd inodes must have even addresses");

struct ws_inode {
	int fd; /* O_PATH|O_NOFOLLOW of the backing file */
	dev_t dev;
	ino_t ino;
	uint64_t nlookup;      /* lookups the kernel holds; under tab.lock */
	bool pinned;	       /* the root: kept when nlookup drops to zero */
	struct ws_inode *next; /* hash chain; under tab.lock */
};

struct ws_dir {
	pthread_mutex_t lock;
	DIR *dp;
	off_t offset;		/* d_off of the last entry handed out: where dp stands */
	struct dirent *pending; /* read from dp but not yet handed out (buffer was full) */
};

#define TAB_MIN_BUCKETS 1024

static struct {
	pthread_mutex_t lock;
	struct ws_inode **bucket;
	size_t nbucket; /* a power of two */
	size_t count;
} tab = {.lock = PTHREAD_MUTEX_INITIALIZER};

static struct ws_opts opts;
static struct ws_inode *root;

/* ---- inode table ---- */

static size_t tab_hash(dev_t dev, ino_t ino)
{
	uint64_t h =
	    ((uint64_t)ino ^ ((uint64_t)dev << 32 | (uint64_t)dev >> 32)) * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h ^ (h >> 29));
}

static struct ws_inode *tab_find(dev_t dev, ino_t ino)
{
	struct ws_inode *in = tab.bucket[tab_hash(dev, ino) & (tab.nbucket - 1)];

	while (in && !(in->ino == ino && in->dev == dev))
		in = in->next;
	return in;
}

static void tab_link(struct ws_inode **bucket, size_t nbucket, struct ws_inode *in)
{
	struct ws_inode **head = &bucket[tab_hash(in->dev, in->ino) & (nbucket - 1)];

	in->next = *head;
	*head = in;
}

static void tab_grow(void)
{
	size_t n = tab.nbucket * 2;
	struct ws_inode **b = xcalloc(n, sizeof(*b));

	for (size_t i = 0; i < tab.nbucket; i++) {
		struct ws_inode *in = tab.bucket[i], *next;

		for (; in; in = next) {
			next = in->next;
			tab_link(b, n, in);
		}
	}
	free(tab.bucket);
	tab.bucket = b;
	tab.nbucket = n;
}

static void tab_insert(struct ws_inode *in)
{
	if (tab.count >= tab.nbucket)
		tab_grow();
	tab_link(tab.bucket, tab.nbucket, in);
	tab.count++;
}

static void tab_remove(struct ws_inode *in)
{
	struct ws_inode **pp = &tab.bucket[tab_hash(in->dev, in->ino) & (tab.nbucket - 1)];

	while (*pp != in)
		pp = &(*pp)->next;
	*pp = in->next;
	tab.count--;
}

/* ---- inodes ---- */

static struct ws_inode *inode_of(fuse_ino_t ino)
{
	return (struct ws_inode *)(uintptr_t)ino;
}

static int fd_of(fuse_ino_t ino)
{
	return inode_of(ino)->fd;
}

static fuse_ino_t ino_of(struct ws_inode *in)
{
	fuse_ino_t ino = (fuse_ino_t)(uintptr_t)in;

	assert(ws_is_ino(ino));
	return ino;
}

/* Finds or makes the inode of a backing file and counts one kernel lookup of it. Takes fd:
 * keeps it in a new inode or closes it when the file is already known. */
static fuse_ino_t inode_ref(int fd, const struct stat *st)
{
	struct ws_inode *in, *fresh = NULL;

	pthread_mutex_lock(&tab.lock);
	in = tab_find(st->st_dev, st->st_ino);
	if (!in) {
		fresh = in = xcalloc(1, sizeof(*in));
		in->fd = fd;
		in->dev = st->st_dev;
		in->ino = st->st_ino;
		tab_insert(in);
	}
	in->nlookup++;
	pthread_mutex_unlock(&tab.lock);
	if (!fresh)
		close(fd);
	return ino_of(in);
}

/* Counts one more kernel lookup of an inode the kernel already holds (link). */
static void inode_ref_again(fuse_ino_t ino)
{
	pthread_mutex_lock(&tab.lock);
	inode_of(ino)->nlookup++;
	pthread_mutex_unlock(&tab.lock);
}

void ws_forget_one(fuse_ino_t ino, uint64_t nlookup)
{
	struct ws_inode *in = inode_of(ino);
	bool drop = false;

	pthread_mutex_lock(&tab.lock);
	if (nlookup > in->nlookup) {
		log_warnx("workspace: forget %ju of inode %ju looked up %ju times",
			  (uintmax_t)nlookup, (uintmax_t)in->ino, (uintmax_t)in->nlookup);
		nlookup = in->nlookup;
	}
	in->nlookup -= nlookup;
	if (in->nlookup == 0 && !in->pinned) {
		tab_remove(in);
		drop = true;
	}
	pthread_mutex_unlock(&tab.lock);
	if (drop) {
		close(in->fd);
		free(in);
	}
}

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

static void fill_timeouts(struct fuse_entry_param *e)
{
	e->attr_timeout = opts.attr_timeout;
	e->entry_timeout = opts.entry_timeout;
}

/* Replies an entry; when the reply does not reach the kernel, its lookup never counted. */
static void reply_entry(fuse_req_t req, const struct fuse_entry_param *e)
{
	if (fuse_reply_entry(req, e) != 0)
		ws_forget_one(e->ino, 1);
}

/* Looks name up under parent, counting one kernel lookup; 0 or -errno. */
static int do_lookup(fuse_ino_t parent, const char *name, struct fuse_entry_param *e)
{
	int fd, res;

	memset(e, 0, sizeof(*e));
	fill_timeouts(e);
	/* The kernel never sends these without export support; ".." of the root is outside. */
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strchr(name, '/'))
		return -EINVAL;
	fd = openat(fd_of(parent), name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return -errno;
	res = neg_errno(fstatat(fd, "", &e->attr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));
	if (res) {
		close(fd);
		return res;
	}
	e->ino = inode_ref(fd, &e->attr);
	return 0;
}

/* Flags to reopen a file through its magic link: O_NOFOLLOW would refuse the link itself;
 * O_DIRECT is dropped because FUSE direct I/O reaches us with unaligned buffers and offsets. */
static int reopen_flags(int flags)
{
	return (flags & ~(O_NOFOLLOW | O_DIRECT)) | O_CLOEXEC;
}

/* ---- credentials ---- */

/* What ws_as_caller changed on this thread, for ws_restore. */
struct ws_cred {
	bool umask_set;
	bool switched;
	mode_t umask;
	uid_t fsuid;
	gid_t fsgid;
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
};

static int caps_get(struct __user_cap_data_struct *data)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};

	return (int)syscall(SYS_capget, &h, data);
}

static int caps_set(struct __user_cap_data_struct *data)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};

	return (int)syscall(SYS_capset, &h, data);
}

/* Switching fsuid away from 0 drops the file-system capabilities. The kernel has already
 * checked the caller's permissions on the mount (default_permissions), and the daemon lacks
 * the caller's supplementary groups, so take back only DAC bypass and FOWNER: new files get
 * the caller's owner while CAP_FSETID, CAP_MKNOD and CAP_CHOWN stay dropped. */
static void caps_keep_dac(const struct __user_cap_data_struct *saved)
{
	const uint32_t keep = 1U << CAP_DAC_OVERRIDE | 1U << CAP_DAC_READ_SEARCH | 1U << CAP_FOWNER;
	struct __user_cap_data_struct now[_LINUX_CAPABILITY_U32S_3];

	if (caps_get(now) == -1)
		return;
	now[0].effective |= saved[0].effective & keep;
	if (caps_set(now) == -1)
		log_warn("workspace: capset");
}

/* Runs the rest of a creating request with the caller's umask already applied by the kernel
 * (so ours must be 0) and, when the daemon is root, with the caller's fsuid/fsgid so that new
 * files belong to the caller. Everything is per thread: fsuid/fsgid and capabilities are
 * thread attributes, and the umask becomes one after unshare(CLONE_FS). */
static void ws_as_caller(fuse_req_t req, struct ws_cred *c)
{
	static atomic_bool warned;
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	memset(c, 0, sizeof(*c));
	if (unshare(CLONE_FS) == 0) {
		c->umask = umask(0);
		c->umask_set = true;
	} else if (!atomic_exchange(&warned, true)) {
		log_warn("workspace: unshare(CLONE_FS); new files get the daemon's umask too");
	}
	if (geteuid() != 0 || (ctx->uid == 0 && ctx->gid == 0))
		return;
	if (caps_get(c->caps) == -1)
		return;
	c->fsgid = (gid_t)setfsgid(ctx->gid);
	c->fsuid = (uid_t)setfsuid(ctx->uid);
	c->switched = true;
	caps_keep_dac(c->caps);
}

static void ws_restore(const struct ws_cred *c)
{
	int saved = errno;

	if (c->switched) {
		setfsuid(c->fsuid);
		setfsgid(c->fsgid);
		if (caps_set((struct __user_cap_data_struct *)c->caps) == -1)
			log_warn("workspace: capset restore");
	}
	if (c->umask_set)
		umask(c->umask);
	errno = saved;
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
	int res = do_lookup(parent, name, &e);

	if (res == -ENOENT && opts.entry_timeout > 0) {
		/* A negative entry: ino 0 lets the kernel cache the absence. */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = opts.entry_timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	if (res == -EMFILE || res == -ENFILE)
		log_warnx("workspace: out of file descriptors");
	if (res)
		reply_res(req, res);
	else
		reply_entry(req, &e);
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

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (fstatat(fd_of(ino), "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == -1)
		fuse_reply_err(req, errno);
	else
		fuse_reply_attr(req, &st, opts.attr_timeout);
}

static int set_mode(int fd, mode_t mode)
{
	char p[PROC_FD_LEN];

	return neg_errno(chmod(proc_path(p, fd), mode));
}

static int set_owner(int fd, int valid, const struct stat *attr)
{
	uid_t uid = (valid & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1;
	gid_t gid = (valid & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1;

	return neg_errno(fchownat(fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));
}

static int set_size(int fd, struct fuse_file_info *fi, off_t size)
{
	char p[PROC_FD_LEN];

	if (fi)
		return neg_errno(ftruncate((int)fi->fh, size));
	return neg_errno(truncate(proc_path(p, fd), size));
}

static int set_times(int fd, int valid, const struct stat *attr)
{
	struct timespec tv[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_OMIT}};
	char p[PROC_FD_LEN];

	if (valid & FUSE_SET_ATTR_ATIME_NOW)
		tv[0].tv_nsec = UTIME_NOW;
	else if (valid & FUSE_SET_ATTR_ATIME)
		tv[0] = attr->st_atim;
	if (valid & FUSE_SET_ATTR_MTIME_NOW)
		tv[1].tv_nsec = UTIME_NOW;
	else if (valid & FUSE_SET_ATTR_MTIME)
		tv[1] = attr->st_mtim;
	return neg_errno(utimensat(AT_FDCWD, proc_path(p, fd), tv, 0));
}

/* fi, when given, is an open regular file (ftruncate); everything else goes through the
 * inode fd, which is also right for directories and symlinks. */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid,
		       struct fuse_file_info *fi)
{
	int fd = fd_of(ino), res = 0;

	if (valid & FUSE_SET_ATTR_MODE)
		res = set_mode(fd, attr->st_mode);
	if (!res && (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
		res = set_owner(fd, valid, attr);
	if (!res && (valid & FUSE_SET_ATTR_SIZE))
		res = set_size(fd, fi, attr->st_size);
	if (!res && (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)))
		res = set_times(fd, valid, attr);
	if (res)
		reply_res(req, res);
	else
		op_getattr(req, ino, fi);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[PATH_MAX + 1];
	ssize_t n = readlinkat(fd_of(ino), "", buf, sizeof(buf));

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

/* Replies the entry of a name just made under parent, or the error res of making it. */
static void reply_made(fuse_req_t req, fuse_ino_t parent, const char *name, int res)
{
	struct fuse_entry_param e;

	if (!res)
		res = do_lookup(parent, name, &e);
	if (res)
		reply_res(req, res);
	else
		reply_entry(req, &e);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct ws_cred c;
	int res;

	ws_as_caller(req, &c);
	res = neg_errno(mknodat(fd_of(parent), name, mode, rdev));
	ws_restore(&c);
	reply_made(req, parent, name, res);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct ws_cred c;
	int res;

	ws_as_caller(req, &c);
	res = neg_errno(mkdirat(fd_of(parent), name, mode));
	ws_restore(&c);
	reply_made(req, parent, name, res);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct ws_cred c;
	int res;

	ws_as_caller(req, &c);
	res = neg_errno(symlinkat(link, fd_of(parent), name));
	ws_restore(&c);
	reply_made(req, parent, name, res);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	reply_res(req, neg_errno(unlinkat(fd_of(parent), name, 0)));
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	reply_res(req, neg_errno(unlinkat(fd_of(parent), name, AT_REMOVEDIR)));
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	reply_res(req, neg_errno(renameat2(fd_of(parent), name, fd_of(newparent), newname, flags)));
}

/* linkat(AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH (ENOENT without it); the magic link with
 * AT_SYMLINK_FOLLOW reaches the same inode, a symlink included, without it. */
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
	int res;

	ws_as_caller(req, &c);
	res = link_inode(fd_of(ino), fd_of(newparent), newname);
	ws_restore(&c);
	memset(&e, 0, sizeof(e));
	fill_timeouts(&e);
	if (!res)
		res = neg_errno(
		    fstatat(fd_of(ino), "", &e.attr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));
	if (res) {
		reply_res(req, res);
		return;
	}
	e.ino = ino;
	inode_ref_again(ino);
	reply_entry(req, &e);
}

/* ---- files ---- */

static void set_open_reply(struct fuse_file_info *fi, int fd)
{
	fi->fh = (uint64_t)fd;
	fi->keep_cache = opts.cache;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char p[PROC_FD_LEN];
	int fd = open(proc_path(p, fd_of(ino)), reopen_flags(fi->flags));

	if (fd == -1) {
		if (errno == EMFILE || errno == ENFILE)
			log_warn("workspace: open");
		fuse_reply_err(req, errno);
		return;
	}
	set_open_reply(fi, fd);
	if (fuse_reply_open(req, fi) != 0)
		close(fd);
}

/* O_NOFOLLOW: the kernel resolved the name as absent, so if it is a symlink now (made in the
 * backing dir meanwhile) refuse it rather than create wherever it points. */
static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	struct ws_cred c;
	int fd, flags = (fi->flags & ~O_DIRECT) | O_CREAT | O_NOFOLLOW | O_CLOEXEC, res;

	ws_as_caller(req, &c);
	fd = openat(fd_of(parent), name, flags, mode);
	res = fd == -1 ? -errno : 0;
	ws_restore(&c);
	if (!res)
		res = do_lookup(parent, name, &e);
	if (res) {
		if (fd != -1)
			close(fd);
		reply_res(req, res);
		return;
	}
	set_open_reply(fi, fd);
	if (fuse_reply_create(req, &e, fi) != 0) {
		close(fd);
		ws_forget_one(e.ino, 1);
	}
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);

	(void)ino;
	buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	buf.buf[0].fd = (int)fi->fh;
	buf.buf[0].pos = off;
	fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE); /* replies the error itself */
}

static void op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
			 struct fuse_file_info *fi)
{
	struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in));
	ssize_t n;

	(void)ino;
	out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	out.buf[0].fd = (int)fi->fh;
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
	ssize_t n = pwrite((int)fi->fh, buf, size, off);

	(void)ino;
	if (n == -1)
		fuse_reply_err(req, errno);
	else
		fuse_reply_write(req, (size_t)n);
}

/* Closing a duplicate reports deferred write errors (NFS etc.) without closing fh. */
static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int dup = fcntl((int)fi->fh, F_DUPFD_CLOEXEC, 0);

	(void)ino;
	if (dup == -1)
		fuse_reply_err(req, errno);
	else
		reply_res(req, neg_errno(close(dup)));
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	close((int)fi->fh);
	fuse_reply_err(req, 0);
}

static int sync_fd(int fd, int datasync)
{
	return neg_errno(datasync ? fdatasync(fd) : fsync(fd));
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	reply_res(req, sync_fd((int)fi->fh, datasync));
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
			 struct fuse_file_info *fi)
{
	(void)ino;
	reply_res(req, neg_errno(fallocate((int)fi->fh, mode, offset, length)));
}

static void op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			       struct fuse_file_info *fi_out, size_t len, int flags)
{
	ssize_t n;

	(void)ino_in;
	(void)ino_out;
	n = copy_file_range((int)fi_in->fh, &off_in, (int)fi_out->fh, &off_out, len,
			    (unsigned int)flags);
	if (n == -1)
		fuse_reply_err(req, errno);
	else
		fuse_reply_write(req, (size_t)n);
}

static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	off_t res = lseek((int)fi->fh, off, whence);

	(void)ino;
	if (res == -1)
		fuse_reply_err(req, errno);
	else
		fuse_reply_lseek(req, res);
}

static void op_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	(void)ino;
	reply_res(req, neg_errno(flock((int)fi->fh, op)));
}

/* ---- directories ---- */

static struct ws_dir *dir_of(struct fuse_file_info *fi)
{
	return (struct ws_dir *)(uintptr_t)fi->fh;
}

static void dir_free(struct ws_dir *d)
{
	closedir(d->dp);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ws_dir *d;
	DIR *dp;
	int fd = openat(fd_of(ino), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd == -1) {
		fuse_reply_err(req, errno);
		return;
	}
	dp = fdopendir(fd);
	if (!dp) {
		fuse_reply_err(req, errno);
		close(fd);
		return;
	}
	d = xcalloc(1, sizeof(*d));
	pthread_mutex_init(&d->lock, NULL);
	d->dp = dp;
	fi->fh = (uint64_t)(uintptr_t)d;
	fi->keep_cache = opts.cache;
	fi->cache_readdir = opts.cache;
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
static ssize_t dir_add(fuse_req_t req, fuse_ino_t ino, char *p, size_t rem, const struct dirent *de,
		       bool plus)
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
	res = do_lookup(ino, de->d_name, &e);
	if (res)
		return res;
	n = fuse_add_direntry_plus(req, p, rem, de->d_name, &e, de->d_off);
	if (n > rem) {
		ws_forget_one(e.ino, 1);
		return 0;
	}
	return (ssize_t)n;
}

/* Fills buf from d at off; returns the bytes filled, or -errno if none were. */
static ssize_t dir_fill(fuse_req_t req, fuse_ino_t ino, struct ws_dir *d, char *buf, size_t size,
			off_t off, bool plus)
{
	size_t used = 0;
	ssize_t n = 0;

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
		n = dir_add(req, ino, buf + used, size - used, de, plus);
		if (n <= 0 && n != -ENOENT)
			break;
		used += n > 0 ? (size_t)n : 0;
		d->offset = de->d_off;
		d->pending = NULL;
	}
	return used > 0 || n >= 0 ? (ssize_t)used : n;
}

static void readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi, bool plus)
{
	struct ws_dir *d = dir_of(fi);
	char *buf = xmalloc(size);
	ssize_t n;

	pthread_mutex_lock(&d->lock);
	n = dir_fill(req, ino, d, buf, size, off, plus);
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
	readdir_common(req, ino, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	readdir_common(req, ino, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	dir_free(dir_of(fi));
	fuse_reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	reply_res(req, sync_fd(dirfd(dir_of(fi)->dp), datasync));
}

/* ---- file system, xattrs, access ---- */

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st;

	if (fstatvfs(fd_of(ino), &st) == -1)
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

	reply_res(req, neg_errno(setxattr(proc_path(p, fd_of(ino)), name, value, size, flags)));
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
	char p[PROC_FD_LEN], *buf = size ? xmalloc(size) : NULL;
	ssize_t n = getxattr(proc_path(p, fd_of(ino)), name, buf, size);

	reply_xattr_res(req, n, buf, size);
	free(buf);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char p[PROC_FD_LEN], *buf = size ? xmalloc(size) : NULL;
	ssize_t n = listxattr(proc_path(p, fd_of(ino)), buf, size);

	reply_xattr_res(req, n, buf, size);
	free(buf);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	char p[PROC_FD_LEN];

	reply_res(req, neg_errno(removexattr(proc_path(p, fd_of(ino)), name)));
}

/* Checked as the daemon; only reached when the mount lacks default_permissions. */
static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	char p[PROC_FD_LEN];

	reply_res(req, neg_errno(faccessat(AT_FDCWD, proc_path(p, fd_of(ino)), mask, 0)));
}

/* getlk/setlk stay NULL: ws_init_conn turns POSIX locks off, so the kernel keeps them local. */
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
	const unsigned int want = FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
				  FUSE_CAP_SPLICE_MOVE | FUSE_CAP_FLOCK_LOCKS |
				  FUSE_CAP_READDIRPLUS;

	conn->want |= want & conn->capable;
	/* No writeback cache (control files need every write), no NFS export (lookups of ".."
	 * would leave the workspace), no fs-side suid clearing, kernel-local POSIX locks. */
	conn->want &= ~(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_EXPORT_SUPPORT |
			FUSE_CAP_HANDLE_KILLPRIV | FUSE_CAP_POSIX_LOCKS);
}

static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1 || rl.rlim_cur == rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
		log_warn("workspace: setrlimit RLIMIT_NOFILE");
}

int ws_open(const char *dir, const struct ws_opts *o)
{
	struct stat st;
	int fd, res;

	opts = *o;
	raise_nofile();
	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1 || fstat(fd, &st) == -1) {
		res = -errno;
		log_warn("workspace: %s", dir);
		if (fd != -1)
			close(fd);
		return res;
	}
	root = xcalloc(1, sizeof(*root));
	root->fd = fd;
	root->dev = st.st_dev;
	root->ino = st.st_ino;
	root->pinned = true;
	pthread_mutex_lock(&tab.lock);
	tab.nbucket = TAB_MIN_BUCKETS;
	tab.bucket = xcalloc(tab.nbucket, sizeof(*tab.bucket));
	tab_insert(root);
	pthread_mutex_unlock(&tab.lock);
	return 0;
}

void ws_close(void)
{
	pthread_mutex_lock(&tab.lock);
	for (size_t i = 0; i < tab.nbucket; i++) {
		struct ws_inode *in = tab.bucket[i], *next;

		for (; in; in = next) {
			next = in->next;
			close(in->fd);
			free(in);
		}
	}
	free(tab.bucket);
	tab.bucket = NULL;
	tab.nbucket = tab.count = 0;
	root = NULL;
	pthread_mutex_unlock(&tab.lock);
}

int ws_root_entry(struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	fill_timeouts(e);
	if (fstatat(root->fd, "", &e->attr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == -1)
		return -errno;
	e->ino = ino_of(root);
	inode_ref_again(e->ino);
	return 0;
}

fuse_ino_t ws_root_ino(void)
{
	return ino_of(root);
}
