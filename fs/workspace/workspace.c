/* The workspace passthrough, everything under MOUNT/workspace/: the helpers all handlers share,
 * the operation table, and the setup. Names are ws_name.c's, attributes, extended attributes and
 * statfs ws_attr.c's, open files ws_file.c's, open directories ws_dir.c's, the inode table
 * ws_inode.c's and the descriptor budget ws_budget.c's, the coherence with the sandbox's own
 * changes ws_inval.c's, the caller's credentials ws_cred.c's, and what libfuse 3.14 does not
 * know (passthrough, killpriv v2, O_TMPFILE) ws_dev.c's.
 *
 * Each inode has an O_PATH|O_NOFOLLOW fd of its backing file and every operation is done
 * relative to such an fd (or through its /proc/self/fd magic link, which names the inode itself
 * and never walks a path), so the daemon never follows a symlink of the workspace out of it.
 * A handler takes the fds it needs with ws_budget_use (which reopens one the budget closed) and
 * gives them back with ws_budget_unuse; open files and directories keep their inode's fd in use.
 *
 * File data: when the daemon is root, the kernel reads and writes open files on the backing
 * files itself (FUSE passthrough), sharing the page cache with the sandbox, which writes the
 * backing directory directly. Otherwise data goes through the daemon and the mount's page
 * cache. Either way writes are write-through (no writeback cache: the connection is shared with
 * the control files, whose sizes the kernel must take from us, and it would hide the sandbox's
 * writes; see docs/workspace.md), so every write() reaches the backing file before it
 * returns and close needs no FLUSH (FOPEN_NOFLUSH).
 *
 * Caching (ws_opts.cache): names, attributes, negative entries, data pages, directory listings
 * and symlink targets are kept by the kernel for the timeout, and dropped by ws_inval.c when the
 * sandbox changes them; a changed mtime or size also drops the pages (FUSE_CAP_AUTO_INVAL_DATA).
 *
 * The kernel sends FORGET only for an inode it has evicted, i.e. one no request in flight
 * refers to (nor an open file), so handlers use inodes without holding them. */
#include "ws_priv.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "idmap.h"
#include "log.h"

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

/* Whether the kernel may keep what it learns of in (ws_inval.c sees its changes). */
bool ws_cacheable(struct ws_inode *in)
{
	return opts.cache && !__atomic_load_n(&in->uncached, __ATOMIC_RELAXED);
}

double ws_attr_timeout(struct ws_inode *in)
{
	return ws_cacheable(in) ? opts.timeout : 0;
}

/* Whether the kernel may keep what it learns at all (absences included). */
bool ws_caching(void)
{
	return opts.cache;
}

void ws_warn_nofile(int err)
{
	static bool warned;

	if ((err == EMFILE || err == ENFILE) &&
	    !__atomic_exchange_n(&warned, true, __ATOMIC_RELAXED))
		log_warnx("workspace: out of file descriptors (budget %ld, %ld open); lower "
			  "[workspace] max_fds or raise the daemon's RLIMIT_NOFILE",
			  ws_budget_max(), ws_budget_fds_open());
}

/* Looks name up in parent (whose fd, in use, is pfd), counting one kernel lookup. */
int ws_lookup_in(fuse_ino_t parent, int pfd, const char *name, struct fuse_entry_param *e)
{
	int res = ws_inode_lookup(inode_of(parent), pfd, name, e, opts.timeout);

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

/* ---- operation table ---- */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	ws_init_conn(conn);
}

/* getlk/setlk stay NULL: POSIX locks are the kernel's own (see ws_init_conn). */
const struct fuse_lowlevel_ops ws_ops = {
    .init = op_init,
    .lookup = ws_name_lookup,
    .forget = ws_name_forget,
    .forget_multi = ws_name_forget_multi,
    .getattr = ws_attr_getattr,
    .setattr = ws_attr_setattr,
    .readlink = ws_attr_readlink,
    .mknod = ws_name_mknod,
    .mkdir = ws_name_mkdir,
    .unlink = ws_name_unlink,
    .rmdir = ws_name_rmdir,
    .symlink = ws_name_symlink,
    .rename = ws_name_rename,
    .link = ws_name_link,
    .open = ws_file_open,
    .read = ws_file_read,
    .write = ws_file_write,
    .write_buf = ws_file_write_buf,
    .flush = ws_file_flush,
    .release = ws_file_release,
    .fsync = ws_file_fsync,
    .opendir = ws_dir_opendir,
    .readdir = ws_dir_readdir,
    .readdirplus = ws_dir_readdirplus,
    .releasedir = ws_dir_releasedir,
    .fsyncdir = ws_dir_fsyncdir,
    .statfs = ws_attr_statfs,
    .setxattr = ws_attr_setxattr,
    .getxattr = ws_attr_getxattr,
    .listxattr = ws_attr_listxattr,
    .removexattr = ws_attr_removexattr,
    .access = ws_attr_access,
    .create = ws_file_create,
    .flock = ws_file_flock,
    .fallocate = ws_file_fallocate,
    .copy_file_range = ws_file_copy_file_range,
    .lseek = ws_file_lseek,
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
	 * splice from the device (the TMPFILE hook reads requests itself; see ws_dev.c). */
	conn->want &= ~(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_EXPORT_SUPPORT |
			FUSE_CAP_HANDLE_KILLPRIV | FUSE_CAP_POSIX_LOCKS);
	conn->want &= ~FUSE_CAP_SPLICE_READ;
	/* The INIT reply goes out on this thread right after we return. */
	ws_dev_patch_init(ws_cred_root() && opts.passthrough);
	/* Readahead and async reads: more requests in flight than the default 12. */
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	conn->max_readahead = UINT_MAX; /* as much as the kernel offers */
	ws_dev_init_done();
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
	ws_budget_set(max);
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
	ws_cred_remember_self();
	ws_inval_init(opts.cache, opts.timeout);
	return ws_inode_open(fd, &st);
}

static atomic_bool kernel_mounted;

void ws_kernel_mounted(void)
{
	atomic_store(&kernel_mounted, true);
	ws_inval_off();
}

bool ws_through_fuse(void)
{
	return !atomic_load(&kernel_mounted);
}

void ws_close(void)
{
	ws_inode_close();
	ws_inval_stop();
	ws_cred_forget_self();
}

/* The name "workspace" always means the root: the kernel keeps it for good (its attributes
 * follow the cache settings like any other's). A failed revalidation would make the kernel
 * detach the workspace mounted on it (ws_mount.h), so it never has to be revalidated. */
#define ROOT_ENTRY_TIMEOUT 1e9

int ws_root_entry(struct fuse_entry_param *e)
{
	struct ws_inode *root = ws_inode_root();
	int res;

	memset(e, 0, sizeof(*e));
	e->attr_timeout = ws_attr_timeout(root);
	e->entry_timeout = ROOT_ENTRY_TIMEOUT;
	res = ws_stat_fd(root->fd, &e->attr);
	if (res)
		return res;
	e->ino = ino_of(root);
	ws_inode_ref_again(root);
	return 0;
}

fuse_ino_t ws_root_ino(void)
{
	return ino_of(ws_inode_root());
}
