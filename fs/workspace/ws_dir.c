/* The workspace's open directories: opendir, readdir and readdirplus (whose entries count as
 * lookups), releasedir and fsyncdir. The backing directory is read only at the first READDIR,
 * from the inode's fd, which the open directory keeps in use. */
#include "ws_priv.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xmalloc.h"

/* An open directory; it keeps its inode's fd in use. */
struct ws_dir {
	pthread_mutex_t lock;
	struct ws_inode *in;
	DIR *dp;      /* opened at the first readdir: with cached listings there may be none */
	off_t offset; /* d_off of the last entry handed out: where dp stands */
	struct dirent *pending; /* read from dp but not yet handed out (buffer was full) */
};

static struct ws_dir *dir_of(struct fuse_file_info *fi)
{
	return (struct ws_dir *)(uintptr_t)fi->fh;
}

static void dir_free(struct ws_dir *d)
{
	if (d->dp) {
		closedir(d->dp);
		ws_budget_fd_closed();
	}
	ws_budget_unuse(d->in);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* Opens the directory stream of d if it is not yet; 0 or -errno. Under d->lock. */
static int dir_open_stream(struct ws_dir *d)
{
	int fd;

	if (d->dp)
		return 0;
	ws_budget_fd_opening();
	fd = openat(d->in->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1) {
		int res = -errno;

		ws_budget_fd_closed();
		ws_warn_nofile(-res);
		return res;
	}
	d->dp = fdopendir(fd);
	if (!d->dp) {
		int res = -errno;

		close(fd);
		ws_budget_fd_closed();
		return res;
	}
	d->offset = 0;
	return 0;
}

/* The kernel has checked the caller's right to read the directory; the daemon reads it at
 * the first READDIR, which does not come while the kernel serves the listing from its cache
 * (a warm `find` or `git status` costs one OPENDIR per directory, and no more). */
void ws_dir_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
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
	 * finds the directory's mtime changed, and ws_inval.c when the sandbox changes it. */
	fi->keep_cache = ws_cacheable(d->in);
	fi->cache_readdir = ws_cacheable(d->in);
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
	res = ws_lookup_in(ino_of(d->in), dirfd(d->dp), de->d_name, &e);
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

void ws_dir_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)ino;
	readdir_common(req, size, off, fi, false);
}

void ws_dir_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	(void)ino;
	readdir_common(req, size, off, fi, true);
}

void ws_dir_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	dir_free(dir_of(fi));
	fuse_reply_err(req, 0);
}

void ws_dir_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct ws_dir *d = dir_of(fi);
	int fd = openat(d->in->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), res;

	(void)ino;
	if (fd == -1) {
		fuse_reply_err(req, errno);
		return;
	}
	res = ws_file_sync_fd(fd, datasync);
	close(fd);
	reply_res(req, res);
}
