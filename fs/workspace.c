/* The workspace passthrough: everything under MOUNT/workspace/. Owns the inode table (backing
 * (st_dev, st_ino) -> struct ws_inode, whose address is the FUSE inode number), the open file
 * and directory handles, and the per-request credential switch used when creating files.
 *
 * Each inode holds an O_PATH|O_NOFOLLOW fd of its backing file and every operation is done
 * relative to such an fd (or through its /proc/self/fd magic link, which names the inode itself
 * and never walks a path), so the daemon never follows a symlink of the workspace out of it.
 * Holding the fd also pins the backing inode, so its (st_dev, st_ino) cannot be reused for
 * another file while the kernel still knows the inode.
 *
 * File data: when the daemon is root, the kernel reads and writes open files on the backing
 * files itself (FUSE passthrough, negotiated below libfuse: see "below libfuse"), sharing the
 * page cache with the sandbox, which writes the backing directory directly. Otherwise data goes
 * through the daemon and the mount's page cache. Either way writes are write-through (no
 * writeback cache: the connection is shared with the control files, whose sizes the kernel must
 * take from us, and it would hide the sandbox's writes; see README, "The workspace"), so every
 * write() reaches the backing file before it returns and close needs no FLUSH (FOPEN_NOFLUSH).
 *
 * Caching (ws_opts.cache): names, attributes, negative entries, data pages, directory listings
 * and symlink targets are kept by the kernel and revalidated after the timeout; a changed mtime
 * or size then drops the pages (FUSE_CAP_AUTO_INVAL_DATA).
 *
 * Concurrency: tab.lock guards the hash table and every nlookup count; an inode is freed only
 * when its nlookup reaches zero under that lock (the root is pinned and never freed). The kernel
 * sends FORGET only for an inode it has evicted, i.e. one no request in flight refers to (nor
 * an open file), so operations use inode fds without taking references. pt_lock guards the
 * inodes' passthrough backing files. Open files are struct ws_file; directory handles carry
 * their own lock. */
#include "workspace.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/fsuid.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "idmap.h"
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
	/* Passthrough: the kernel wants one backing file per inode for all its passthrough
	 * opens. Registered at the first, closed after the last; under pt_lock. */
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

static pthread_mutex_t pt_lock = PTHREAD_MUTEX_INITIALIZER;

struct ws_dir {
	pthread_mutex_t lock;
	struct ws_inode *in;
	DIR *dp; /* opened at the first readdir: with cached listings there may be none */
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

static void init_done(void);

/* ---- below libfuse: passthrough and killpriv ----
 * libfuse 3.14 predates FUSE passthrough (protocol 7.40, FOPEN_PASSTHROUGH), so it is
 * negotiated below libfuse, in the device hooks of ws_attach_session: the INIT reply gains
 * FUSE_PASSTHROUGH (which the kernel only grants with CAP_SYS_ADMIN), and an open reply gains
 * FOPEN_PASSTHROUGH with the id the backing fd was registered under (FUSE_DEV_IOC_BACKING_OPEN).
 * The kernel then does reads, writes, splice and mmap of that open file on the backing file
 * itself: one page cache shared with the sandbox's direct access, and no round trip.
 *
 * The INIT reply also asks for FUSE_HANDLE_KILLPRIV_V2 (protocol 7.33): without it the kernel
 * asks for security.capability (GETXATTR) before every write() to see whether it must be
 * removed, since FUSE inodes never get S_NOSEC otherwise. With it the filesystem kills suid and
 * sgid itself when the request says so (FATTR_KILL_SUIDGID, FUSE_OPEN_KILL_SUIDGID,
 * FUSE_WRITE_KILL_SUIDGID, which libfuse 3.14 drops: the device hook notes them for the
 * handler, see tls_kill_suidgid), and the backing filesystem removes security.capability on
 * write, truncate and chown as usual. */

#define WS_FUSE_SETATTR 4
#define WS_FUSE_OPEN 14
#define WS_FUSE_WRITE 16
#define WS_FUSE_INIT 26
#define WS_FUSE_CREATE 35
#define WS_FUSE_TMPFILE 51
#define WS_FUSE_HANDLE_KILLPRIV_V2 (1u << 28)
#define WS_FUSE_INIT_EXT (1u << 30)
#define WS_FATTR_KILL_SUIDGID (1u << 11)      /* fuse_setattr_in.valid */
#define WS_FUSE_OPEN_KILL_SUIDGID (1u << 0)   /* fuse_open_in, fuse_create_in .open_flags */
#define WS_FUSE_WRITE_KILL_SUIDGID (1u << 2)  /* fuse_write_in.write_flags */
#define WS_FUSE_PASSTHROUGH2 (1u << (37 - 32)) /* in flags2 */
#define WS_FOPEN_KEEP_CACHE (1u << 1)
#define WS_FOPEN_PASSTHROUGH (1u << 7)

struct ws_in_header { /* struct fuse_in_header of <linux/fuse.h> */
	uint32_t len;
	uint32_t opcode;
	uint64_t unique;
	uint64_t nodeid;
	uint32_t uid;
	uint32_t gid;
	uint32_t pid;
	uint32_t padding;
};

struct ws_init_in { /* fuse_init_in, 7.36+ */
	uint32_t major;
	uint32_t minor;
	uint32_t max_readahead;
	uint32_t flags;
	uint32_t flags2;
};

struct ws_init_out { /* fuse_init_out, 7.40 */
	uint32_t major;
	uint32_t minor;
	uint32_t max_readahead;
	uint32_t flags;
	uint16_t max_background;
	uint16_t congestion_threshold;
	uint32_t max_write;
	uint32_t time_gran;
	uint16_t max_pages;
	uint16_t map_alignment;
	uint32_t flags2;
	uint32_t max_stack_depth;
	uint32_t unused[6];
};

struct ws_open_out { /* fuse_open_out, 7.40 */
	uint64_t fh;
	uint32_t open_flags;
	int32_t backing_id;
};

struct ws_backing_map {
	int32_t fd;
	uint32_t flags;
	uint64_t padding;
};

_Static_assert(sizeof(struct ws_in_header) == 40, "fuse_in_header");
_Static_assert(sizeof(struct ws_init_out) == 64, "fuse_init_out");
_Static_assert(sizeof(struct ws_open_out) == 16, "fuse_open_out");

#define WS_FUSE_DEV_IOC_BACKING_OPEN _IOW(229, 1, struct ws_backing_map)
#define WS_FUSE_DEV_IOC_BACKING_CLOSE _IOW(229, 2, uint32_t)
/* The backing file's filesystem must be below this depth: a local filesystem is at 0. */
#define WS_MAX_STACK_DEPTH 1

static struct {
	struct fuse_session *se;
	atomic_bool killpriv2; /* the kernel's INIT offered FUSE_HANDLE_KILLPRIV_V2 */
	atomic_bool offered; /* the kernel's INIT offered passthrough */
	atomic_bool wanted;  /* our INIT reply asked for it */
	atomic_bool active;  /* granted, as far as we know: cleared when the kernel refuses */
} pt;

/* Set around one reply on this thread: the INIT reply to patch, the backing id of an open. */
static __thread bool tls_patch_init;
static __thread int tls_reply_backing_id;
/* The request this thread read last asks to kill suid/sgid (killpriv v2). */
static __thread bool tls_kill_suidgid;

static bool passthrough_active(void)
{
	return atomic_load_explicit(&pt.active, memory_order_relaxed);
}

/* Registers fd with the kernel; the id (> 0), or 0 when it cannot be (then no new backing
 * files are registered if the kernel has no passthrough for us). */
static int backing_open(int fd)
{
	static atomic_bool warned;
	struct ws_backing_map map = {.fd = fd};
	int id = ioctl(fuse_session_fd(pt.se), WS_FUSE_DEV_IOC_BACKING_OPEN, &map);

	if (id > 0)
		return id;
	if (errno == EOPNOTSUPP || errno == EPERM || errno == ENOTTY || errno == EINVAL) {
		if (atomic_exchange(&pt.active, false))
			log_info("workspace: no kernel passthrough (%s); file data goes through "
				 "the daemon", strerror(errno));
	} else if (!atomic_exchange(&warned, true)) {
		log_warn("workspace: FUSE_DEV_IOC_BACKING_OPEN");
	}
	return 0;
}

static void backing_close(int id)
{
	uint32_t u = (uint32_t)id;

	if (ioctl(fuse_session_fd(pt.se), WS_FUSE_DEV_IOC_BACKING_CLOSE, &u) == -1)
		log_warn("workspace: FUSE_DEV_IOC_BACKING_CLOSE %d", id);
}

/* The daemon's own credentials, put back after a request ran as its caller. */
static struct {
	bool root; /* euid 0: files made through workspace/ get the caller's owner */
	uid_t uid;
	gid_t gid;
	int ngroups;
	gid_t *groups;
} self;

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

/* Counts one kernel lookup of the known inode of st, if there is one; 0 if not. */
static fuse_ino_t inode_ref_known(const struct stat *st)
{
	struct ws_inode *in;

	pthread_mutex_lock(&tab.lock);
	in = tab_find(st->st_dev, st->st_ino);
	if (in)
		in->nlookup++;
	pthread_mutex_unlock(&tab.lock);
	return in ? ino_of(in) : 0;
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

static void fill_timeouts(struct fuse_entry_param *e)
{
	e->attr_timeout = opts.timeout;
	e->entry_timeout = opts.timeout;
}

/* Replies an entry; when the reply does not reach the kernel, its lookup never counted. */
static void reply_entry(fuse_req_t req, const struct fuse_entry_param *e)
{
	if (fuse_reply_entry(req, e) != 0)
		ws_forget_one(e->ino, 1);
}

static void warn_nofile(int err)
{
	static atomic_bool warned;

	if ((err == EMFILE || err == ENFILE) && !atomic_exchange(&warned, true))
		log_warnx("workspace: out of file descriptors (one per inode the kernel holds); "
			  "raise the hard RLIMIT_NOFILE of the daemon");
}

/* Looks name up in the directory dirfd (of inode parent), counting one kernel lookup; 0 or
 * -errno. A file already known costs one fstatat; a new one gets its O_PATH fd. */
static int lookup_at(int dirfd, const char *name, struct fuse_entry_param *e)
{
	int fd, res;

	memset(e, 0, sizeof(*e));
	fill_timeouts(e);
	/* The kernel never sends these without export support; ".." of the root is outside. */
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strchr(name, '/'))
		return -EINVAL;
	if (fstatat(dirfd, name, &e->attr, AT_SYMLINK_NOFOLLOW) == -1)
		return -errno;
	idmap_stat(&e->attr);
	e->ino = inode_ref_known(&e->attr);
	if (e->ino)
		return 0;
	fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1) {
		warn_nofile(errno);
		return -errno;
	}
	res = stat_fd(fd, &e->attr);
	if (res) {
		close(fd);
		return res;
	}
	e->ino = inode_ref(fd, &e->attr);
	return 0;
}

static int do_lookup(fuse_ino_t parent, const char *name, struct fuse_entry_param *e)
{
	return lookup_at(fd_of(parent), name, e);
}

/* Flags to reopen a file through its magic link: O_NOFOLLOW would refuse the link itself;
 * O_DIRECT is dropped because FUSE direct I/O reaches us with unaligned buffers and offsets
 * (the kernel keeps the caller's O_DIRECT semantics: no page cache on its side). */
static int reopen_flags(int flags)
{
	return (flags & ~(O_NOFOLLOW | O_DIRECT | O_CREAT | O_EXCL | O_NOCTTY)) | O_CLOEXEC;
}

/* ---- credentials ---- */

/* What as_caller changed on this thread, for restore. */
struct ws_cred {
	bool umask_set;
	bool switched;
	mode_t umask;
	bool adopt;  /* the caller is the mount owner, mapped: create as root, then hand over */
	uid_t adopt_uid;
	gid_t adopt_gid;
};

static __thread bool thread_fs_private;

/* The caller's supplementary groups, or none if they cannot be read (process gone). */
static int caller_groups(fuse_req_t req, gid_t *small, int nsmall, gid_t **out)
{
	int n = fuse_req_getgroups(req, nsmall, small);
	gid_t *big;

	*out = small;
	if (n <= nsmall)
		return n < 0 ? 0 : n;
	big = xmalloc((size_t)n * sizeof(*big));
	n = fuse_req_getgroups(req, n, big);
	if (n < 0) {
		free(big);
		return 0;
	}
	*out = big;
	return n;
}

/* Runs the rest of a creating request as its caller. The umask: the kernel sends it instead of
 * applying it (FUSE_CAP_DONT_MASK), so the backing filesystem applies it, or a default ACL
 * instead, as a local filesystem would. The owner: when the daemon is root and the caller is
 * someone else, fsuid, fsgid and the supplementary groups of this thread become the caller's
 * (raw syscalls: glibc would change every thread), so new files belong to the caller, setgid
 * directories and the S_ISGID bit behave as for the caller, and the backing filesystem checks
 * the same permissions the kernel already checked on the mount (default_permissions). A fsuid
 * other than 0 drops the file-system capabilities; going back to 0 restores them. */
static void as_caller(fuse_req_t req, struct ws_cred *c)
{
	static atomic_bool warned;
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	gid_t small[32], *groups, gid;
	uid_t uid;
	int n;

	memset(c, 0, sizeof(*c));
	if (!thread_fs_private) {
		if (unshare(CLONE_FS) == 0)
			thread_fs_private = true;
		else if (!atomic_exchange(&warned, true))
			log_warn("workspace: unshare(CLONE_FS); new files get the daemon's umask");
	}
	if (thread_fs_private) {
		c->umask = umask(ctx->umask & 07777);
		c->umask_set = true;
	}
	uid = idmap_uid(ctx->uid);
	gid = idmap_gid(ctx->gid);
	if (self.root && uid != ctx->uid && ctx->uid == self.uid) {
		/* The mount owner (root), whose files are stored as the sandbox user's: create
		 * with root's powers, as a local fs would, then give the new file away. */
		c->adopt = true;
		c->adopt_uid = uid;
		c->adopt_gid = gid;
		return;
	}
	if (!self.root || (ctx->uid == self.uid && ctx->gid == self.gid))
		return;
	n = caller_groups(req, small, (int)(sizeof(small) / sizeof(small[0])), &groups);
	if (syscall(SYS_setgroups, (size_t)n, groups) == -1)
		log_warn("workspace: setgroups");
	if (groups != small)
		free(groups);
	setfsgid(ctx->gid);
	setfsuid(ctx->uid);
	c->switched = true;
}

/* Hands a file the mount owner just made (dirfd/name, or fd) to the sandbox user, keeping its
 * mode (a chown clears the set-id bits) and a group other than the owner's (setgid dirs). */
static void adopt_new(const struct ws_cred *c, int dirfd, const char *name, int fd)
{
	struct stat st;
	gid_t gid;
	int rc;

	if (!c->adopt)
		return;
	rc = fd >= 0 ? fstat(fd, &st) : fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW);
	if (rc < 0 || st.st_uid != self.uid)
		return;
	gid = st.st_gid == self.gid ? c->adopt_gid : st.st_gid;
	rc = fd >= 0 ? fchown(fd, c->adopt_uid, gid)
		     : fchownat(dirfd, name, c->adopt_uid, gid, AT_SYMLINK_NOFOLLOW);
	if (rc < 0) {
		log_warn("workspace: giving %s to the sandbox user", name ? name : "a new file");
		return;
	}
	if (!S_ISLNK(st.st_mode) && (st.st_mode & (S_ISUID | S_ISGID))) {
		if (fd >= 0)
			fchmod(fd, st.st_mode & 07777);
		else
			fchmodat(dirfd, name, st.st_mode & 07777, 0);
	}
}

static void restore(const struct ws_cred *c)
{
	int saved = errno;

	if (c->switched) {
		setfsuid(self.uid);
		setfsgid(self.gid);
		if (syscall(SYS_setgroups, (size_t)self.ngroups, self.groups) == -1)
			log_warn("workspace: setgroups restore");
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

	if (res == -ENOENT && opts.cache) {
		/* A negative entry: ino 0 lets the kernel cache the absence. */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = opts.timeout;
		fuse_reply_entry(req, &e);
		return;
	}
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
	int res;

	(void)fi;
	res = stat_fd(fd_of(ino), &st);
	if (res)
		reply_res(req, res);
	else
		fuse_reply_attr(req, &st, opts.timeout);
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

	if (!tls_kill_suidgid)
		return 0;
	tls_kill_suidgid = false;
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
	int fd = fd_of(ino), res = 0;

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

	as_caller(req, &c);
	res = neg_errno(mknodat(fd_of(parent), name, mode, rdev));
	if (!res)
		adopt_new(&c, fd_of(parent), name, -1);
	restore(&c);
	reply_made(req, parent, name, res);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct ws_cred c;
	int res;

	as_caller(req, &c);
	res = neg_errno(mkdirat(fd_of(parent), name, mode));
	if (!res)
		adopt_new(&c, fd_of(parent), name, -1);
	restore(&c);
	reply_made(req, parent, name, res);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct ws_cred c;
	int res;

	as_caller(req, &c);
	res = neg_errno(symlinkat(link, fd_of(parent), name));
	if (!res)
		adopt_new(&c, fd_of(parent), name, -1);
	restore(&c);
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
	int res;

	as_caller(req, &c);
	res = link_inode(fd_of(ino), fd_of(newparent), newname);
	restore(&c);
	memset(&e, 0, sizeof(e));
	fill_timeouts(&e);
	if (!res)
		res = stat_fd(fd_of(ino), &e.attr);
	if (res) {
		reply_res(req, res);
		return;
	}
	e.ino = ino;
	inode_ref_again(ino);
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

/* The passthrough backing id for an open of in (flags: the open's), counting one more user
 * of it; 0 if none can be registered. The kernel wants every open of an inode that has a
 * backing file to be a passthrough open of that same file, so it is shared; *rw says whether
 * it serves writes (else writes of this open must go through the daemon). The backing file has
 * only an access mode: O_APPEND, O_SYNC and the like of each open reach the backing write as
 * that write's own flags. */
static int backing_get(struct ws_inode *in, int flags, bool *rw)
{
	bool write = (flags & O_ACCMODE) != O_RDONLY;
	char p[PROC_FD_LEN];
	int id = 0, fd;

	pthread_mutex_lock(&pt_lock);
	if (in->backing_refs > 0) {
		in->backing_refs++;
		id = in->backing_id;
	} else if (passthrough_active()) {
		fd = open(proc_path(p, in->fd), (write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
		id = fd == -1 ? 0 : backing_open(fd);
		if (id > 0) {
			in->backing_id = id;
			in->backing_fd = fd;
			in->backing_refs = 1;
			in->backing_rw = write;
		} else if (fd != -1) {
			close(fd);
		}
	}
	*rw = in->backing_rw;
	pthread_mutex_unlock(&pt_lock);
	return id;
}

static void backing_put(struct ws_inode *in)
{
	pthread_mutex_lock(&pt_lock);
	if (--in->backing_refs == 0) {
		backing_close(in->backing_id);
		close(in->backing_fd);
		in->backing_id = 0;
		in->backing_fd = -1;
	}
	pthread_mutex_unlock(&pt_lock);
}

static void file_free(struct ws_file *f)
{
	if (f->pt)
		backing_put(f->pt);
	close(f->fd); /* also drops a flock() taken through it */
	free(f);
}

/* Replies an open or create of the backing fd (taken) with the kernel's caching mode:
 * passthrough (reads, writes and mmap go to the backing file in the kernel, no FUSE page cache)
 * when the connection has it, else the FUSE page cache (kept with ws_opts.cache). Some opens
 * need their reads and writes to come to the daemon instead (direct I/O): O_DIRECT ones, whose
 * unaligned buffers the backing file would refuse, writers of suid/sgid files (killpriv), and
 * writers sharing a read-only backing file; with passthrough they are passthrough and direct
 * I/O at once (the kernel then only maps through the backing file). Returns what
 * fuse_reply_open/create returned. */
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
	if (atomic_load_explicit(&pt.wanted, memory_order_relaxed)) {
		/* An inode that has a backing file keeps it even if the kernel stopped taking
		 * new ones: all its opens must name it. */
		id = backing_get(in, fi->flags, &rw);
		if (id > 0) {
			f->pt = in;
			tls_reply_backing_id = id;
			if ((write && !rw) || writes_need_kill(fd, fi->flags))
				fi->direct_io = 1;
		} else if (passthrough_active()) {
			/* This file could not be registered (ELOOP, EMFILE...). Direct I/O takes no
			 * inode I/O mode, so it fits later passthrough opens of the inode. */
			fi->direct_io = 1;
		}
	}
	if (!fi->direct_io && !f->pt) {
		/* Without caching, pages are dropped at each open (close-to-open consistency); with
		 * it, the kernel drops them itself when a revalidation finds another mtime or size. */
		fi->keep_cache = opts.cache;
	}
	rc = e ? fuse_reply_create(req, e, fi) : fuse_reply_open(req, fi);
	tls_reply_backing_id = 0;
	if (rc != 0)
		file_free(f);
	return rc;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char p[PROC_FD_LEN];
	int fd = open(proc_path(p, fd_of(ino)), reopen_flags(fi->flags));

	if (fd == -1) {
		warn_nofile(errno);
		fuse_reply_err(req, errno);
		return;
	}
	kill_suidgid(fd); /* O_TRUNC */
	reply_opened(req, inode_of(ino), fi, fd, NULL);
}

/* The name the create handler gets for an O_TMPFILE open (see ws_attach_session): the kernel
 * names the unnamed file "/", which no real name can be. */
static bool is_tmpfile_name(const char *name)
{
	return name[0] == '/' && name[1] == '\0';
}

/* An unnamed file in parent: its inode fd is an O_PATH reopen of the open file. */
static int create_tmpfile(fuse_ino_t parent, int flags, mode_t mode, int *fdp,
			  struct fuse_entry_param *e)
{
	char p[PROC_FD_LEN];
	int fd, ifd, res;

	memset(e, 0, sizeof(*e));
	fill_timeouts(e);
	fd = openat(fd_of(parent), ".", (flags & ~(O_CREAT | O_EXCL | O_DIRECT)) | O_CLOEXEC, mode);
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
	e->ino = inode_ref(ifd, &e->attr);
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
	bool existed;
	int res;

	as_caller(req, &c);
	if (is_tmpfile_name(name)) {
		res = create_tmpfile(parent, fi->flags, mode, &fd, &e);
		existed = false;
	} else {
		existed = c.adopt && faccessat(fd_of(parent), name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
		fd = openat(fd_of(parent), name, flags, mode);
		res = fd == -1 ? -errno : 0;
	}
	if (!res && !existed) {
		adopt_new(&c, fd_of(parent), name, fd);
		if (c.adopt && is_tmpfile_name(name))
			stat_fd(fd, &e.attr); /* the owner it was given */
	}
	restore(&c);
	if (!res)
		kill_suidgid(fd); /* an existing file truncated */
	if (!res && !is_tmpfile_name(name))
		res = do_lookup(parent, name, &e);
	if (res) {
		warn_nofile(-res);
		if (fd != -1)
			close(fd);
		reply_res(req, res);
		return;
	}
	if (reply_opened(req, inode_of(e.ino), fi, fd, &e) != 0)
		ws_forget_one(e.ino, 1);
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
	(void)ino;
	file_free(file_of(fi));
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
	if (d->dp)
		closedir(d->dp);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* Opens the directory stream of d if it is not yet; 0 or -errno. Under d->lock. */
static int dir_open_stream(struct ws_dir *d)
{
	int fd;

	if (d->dp)
		return 0;
	fd = openat(d->in->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1) {
		warn_nofile(errno);
		return -errno;
	}
	d->dp = fdopendir(fd);
	if (!d->dp) {
		int res = -errno;

		close(fd);
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
	struct ws_dir *d = xcalloc(1, sizeof(*d));

	pthread_mutex_init(&d->lock, NULL);
	d->in = inode_of(ino);
	fi->fh = (uint64_t)(uintptr_t)d;
	/* The kernel may keep the listing; with auto_inval_data it drops it when a revalidation
	 * finds the directory's mtime changed. */
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
	res = lookup_at(dirfd(d->dp), de->d_name, &e);
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
	int fd = openat(fd_of(ino), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), res;

	(void)fi;
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
	 * splice from the device (the TMPFILE hook reads requests itself; see ws_attach_session). */
	conn->want &= ~(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_EXPORT_SUPPORT |
			FUSE_CAP_HANDLE_KILLPRIV | FUSE_CAP_POSIX_LOCKS);
	conn->want &= ~FUSE_CAP_SPLICE_READ;
	/* The INIT reply goes out on this thread right after we return. */
	tls_patch_init = true;
	if (self.root && opts.passthrough && atomic_load(&pt.offered))
		atomic_store(&pt.wanted, true);
	/* Readahead and async reads: more requests in flight than the default 12. */
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	conn->max_readahead = UINT_MAX; /* as much as the kernel offers */
	init_done();
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

		if (setrlimit(RLIMIT_NOFILE, &more) == 0)
			return;
	}
	if (rl.rlim_cur == rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
		log_warn("workspace: setrlimit RLIMIT_NOFILE");
}

/* ---- readahead ----
 * The kernel offers FUSE 128 KiB of readahead and clamps the mount's bdi to what INIT answers,
 * so the bdi is raised to 1 MiB (one max_pages request) through sysfs once INIT is done. Only
 * root may; others keep 128 KiB. */

#define WS_READAHEAD_KB 1024

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
} init_state = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};

static void init_done(void)
{
	pthread_mutex_lock(&init_state.lock);
	init_state.done = true;
	pthread_cond_broadcast(&init_state.cond);
	pthread_mutex_unlock(&init_state.lock);
}

/* "MAJ:MIN" of the mount at path, from mountinfo (without touching the mount itself). */
static bool mount_devnum(const char *path, char *out, size_t outlen)
{
	char *line = NULL, dev[64], point[PATH_MAX + 1];
	size_t cap = 0;
	bool found = false;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return false;
	while (getline(&line, &cap, f) > 0) {
		/* id parent MAJ:MIN root mountpoint ...; the last match is the top mount */
		if (sscanf(line, "%*s %*s %63s %*s %4096s", dev, point) == 2 &&
		    strcmp(point, path) == 0) {
			snprintf(out, outlen, "%s", dev);
			found = true;
		}
	}
	free(line);
	fclose(f);
	return found;
}

static void *tune_thread(void *arg)
{
	char *mnt = arg, dev[64], path[128];
	struct timespec settle = {0, 20 * 1000 * 1000};
	FILE *f;

	if (mount_devnum(mnt, dev, sizeof(dev))) {
		pthread_mutex_lock(&init_state.lock);
		while (!init_state.done)
			pthread_cond_wait(&init_state.cond, &init_state.lock);
		pthread_mutex_unlock(&init_state.lock);
		nanosleep(&settle, NULL); /* INIT's reply goes out after ws_init_conn returns */
		snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
		f = fopen(path, "we");
		if (f) {
			fprintf(f, "%d\n", WS_READAHEAD_KB);
			if (fclose(f) != 0)
				log_debug("workspace: %s: %s", path, strerror(errno));
		}
	}
	free(mnt);
	return NULL;
}

void ws_tune_mount(const char *mountpoint)
{
	char *abs;
	pthread_t t;

	if (!self.root || mountpoint[0] != '/')
		return;
	abs = xstrdup(mountpoint);
	if (pthread_create(&t, NULL, tune_thread, abs) != 0) {
		free(abs);
		return;
	}
	pthread_detach(t);
}

/* ---- device hooks ----
 * Reads: the kernel sends O_TMPFILE opens as FUSE_TMPFILE, which libfuse 3.14 answers with
 * ENOSYS (and the kernel then refuses O_TMPFILE for good). The request is laid out as a CREATE
 * whose name is "/", and expects a CREATE's reply, so it is relabelled as one; the INIT request
 * tells whether passthrough is on offer. Writes: the INIT and open replies of passthrough (see
 * above). Splice from the device is given up for this (it only saved a copy of write data). */

/* The u32 at off in the request's first argument, 0 if the request is shorter. */
static uint32_t in_u32(const struct ws_in_header *h, ssize_t n, size_t off)
{
	uint32_t v;

	if ((size_t)n < sizeof(*h) + off + sizeof(v))
		return 0;
	memcpy(&v, (const char *)(h + 1) + off, sizeof(v));
	return v;
}

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);
	struct ws_in_header *h = buf;

	(void)userdata;
	tls_kill_suidgid = false;
	if (n < (ssize_t)sizeof(*h))
		return n;
	switch (h->opcode) {
	case WS_FUSE_SETATTR:
		tls_kill_suidgid = in_u32(h, n, 0) & WS_FATTR_KILL_SUIDGID;
		break;
	case WS_FUSE_OPEN:
		tls_kill_suidgid = in_u32(h, n, 4) & WS_FUSE_OPEN_KILL_SUIDGID;
		break;
	case WS_FUSE_CREATE:
		tls_kill_suidgid = in_u32(h, n, 12) & WS_FUSE_OPEN_KILL_SUIDGID;
		break;
	case WS_FUSE_WRITE:
		tls_kill_suidgid = in_u32(h, n, 20) & WS_FUSE_WRITE_KILL_SUIDGID;
		break;
	}
	if (h->opcode == WS_FUSE_TMPFILE) {
		h->opcode = WS_FUSE_CREATE;
	} else if (h->opcode == WS_FUSE_INIT &&
		   n >= (ssize_t)(sizeof(*h) + sizeof(struct ws_init_in))) {
		const struct ws_init_in *in = (const void *)(h + 1);

		if (in->major == 7 && in->minor >= 33 && (in->flags & WS_FUSE_HANDLE_KILLPRIV_V2))
			atomic_store(&pt.killpriv2, true);
		if (in->major == 7 && in->minor >= 40 && (in->flags & WS_FUSE_INIT_EXT) &&
		    (in->flags2 & WS_FUSE_PASSTHROUGH2))
			atomic_store(&pt.offered, true);
	}
	return n;
}

static void patch_reply(struct iovec *iov, int count)
{
	if (count < 2)
		return;
	if (tls_patch_init && iov[1].iov_len >= offsetof(struct ws_init_out, unused)) {
		struct ws_init_out *out = iov[1].iov_base;

		tls_patch_init = false;
		if (atomic_load(&pt.killpriv2))
			out->flags |= WS_FUSE_HANDLE_KILLPRIV_V2;
		if (atomic_load(&pt.wanted)) {
			out->flags |= WS_FUSE_INIT_EXT;
			out->flags2 |= WS_FUSE_PASSTHROUGH2;
			out->max_stack_depth = WS_MAX_STACK_DEPTH;
			atomic_store(&pt.active, true);
		}
	} else if (tls_reply_backing_id > 0 && iov[count - 1].iov_len >= sizeof(struct ws_open_out)) {
		/* an open reply ends with fuse_open_out (after fuse_entry_out for a create) */
		struct ws_open_out *out = (void *)((char *)iov[count - 1].iov_base +
						   iov[count - 1].iov_len - sizeof(*out));

		out->open_flags = (out->open_flags & ~WS_FOPEN_KEEP_CACHE) | WS_FOPEN_PASSTHROUGH;
		out->backing_id = tls_reply_backing_id;
		tls_reply_backing_id = 0;
	}
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	(void)userdata;
	patch_reply(iov, count);
	return writev(fd, iov, count);
}

static ssize_t io_splice_send(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
			      unsigned int flags, void *userdata)
{
	(void)userdata;
	return splice(fdin, offin, fdout, offout, len, flags);
}

int ws_attach_session(struct fuse_session *se)
{
	static const struct fuse_custom_io io = {
	    .writev = io_writev,
	    .read = io_read,
	    .splice_send = io_splice_send,
	};

	pt.se = se;
	return fuse_session_custom_io(se, &io, fuse_session_fd(se));
}

/* ---- open, close ---- */

static void remember_self(void)
{
	int n;

	self.uid = geteuid();
	self.gid = getegid();
	self.root = self.uid == 0;
	n = getgroups(0, NULL);
	if (n > 0) {
		self.groups = xmalloc((size_t)n * sizeof(gid_t));
		n = getgroups(n, self.groups);
	}
	self.ngroups = n > 0 ? n : 0;
}

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
	remember_self();
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
			if (in->backing_refs > 0)
				close(in->backing_fd); /* the kernel never released these opens */
			close(in->fd);
			free(in);
		}
	}
	free(tab.bucket);
	tab.bucket = NULL;
	tab.nbucket = tab.count = 0;
	root = NULL;
	pthread_mutex_unlock(&tab.lock);
	free(self.groups);
	self.groups = NULL;
}

/* The name "workspace" always means the root: the kernel keeps it for good (its attributes
 * follow the cache settings like any other's). A failed revalidation would make the kernel
 * detach the workspace mounted on it (wsmount.h), so it never has to be revalidated. */
#define ROOT_ENTRY_TIMEOUT 1e9

int ws_root_entry(struct fuse_entry_param *e)
{
	int res;

	memset(e, 0, sizeof(*e));
	fill_timeouts(e);
	e->entry_timeout = ROOT_ENTRY_TIMEOUT;
	res = stat_fd(root->fd, &e->attr);
	if (res)
		return res;
	e->ino = ino_of(root);
	inode_ref_again(e->ino);
	return 0;
}

fuse_ino_t ws_root_ino(void)
{
	return ino_of(root);
}
