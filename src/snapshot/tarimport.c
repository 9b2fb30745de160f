/* Importing an archive as a snapshot (snapshots/import/NAME): the bytes written are read as
 * tar (zstd-compressed ones told by their magic number) and each entry is made, as it
 * arrives, in the snapshot's directory before it has a name; at the close, if every entry
 * passed, the directories get their attributes and the snapshot its name: all or nothing.
 * Every entry is made relative to its directory's descriptor without following a link, owned
 * by the sandbox's user, without set-id bits; runs of zeros are left as holes. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "snapshot_priv.h"
#include "tarfmt.h"
#include "tarread.h"
#include "treesync.h"
#include "xmalloc.h"
#include "zstream.h"

/* Zeros in a block this big are a hole, not data. */
#define HOLE_BLOCK 4096

struct dir_meta {
	char *path;
	mode_t mode;
	struct timespec mtime;
	struct tar_xattr *xattrs;
	size_t nxattrs;
};

struct snap_import {
	struct snapshot *s;
	char tmp[32];
	int dir, tree;
	struct tar_reader *tr;
	struct zin *z;
	char head[4]; /* the first bytes, to tell zstd from tar */
	size_t hlen;
	int file; /* the regular file being written, with what it gets once whole */
	uint64_t off;
	struct tar_entry cur;
	struct tar_xattr *xattrs;
	size_t nxattrs;
	struct dir_meta *dirs;
	size_t ndirs;
	uint64_t space_left;
	struct tree_stats st;
	int err;
};

static struct tar_xattr *copy_xattrs(const struct tar_xattr *x, size_t n)
{
	struct tar_xattr *v = xcalloc(n + 1, sizeof(*v));

	for (size_t i = 0; i < n; i++)
		v[i] = (struct tar_xattr){xstrdup(x[i].name),
					  xmemdup(x[i].value, x[i].len ? x[i].len : 1), x[i].len};
	return v;
}

static void free_xattrs(struct tar_xattr *x, size_t n)
{
	for (size_t i = 0; x && i < n; i++) {
		free(x[i].name);
		free(x[i].value);
	}
	free(x);
}

/* The directory that holds path (made, as the sandbox user's, where missing) and *name, the
 * last name of path: a descriptor, or -errno (-EINVAL when a link or a file is in the way). */
static int parent_of(struct snap_import *im, const char *path, const char **name)
{
	char *copy = xstrdup(path), *p = copy, *slash;
	int fd = dup(im->tree);

	*name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	while (fd >= 0 && (slash = strchr(p, '/'))) {
		int next;

		*slash = '\0';
		if (mkdirat(fd, p, 0755) == 0)
			fchownat(fd, p, snap_owner_uid, snap_owner_gid, AT_SYMLINK_NOFOLLOW);
		next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			next = errno == ELOOP || errno == ENOTDIR || errno == EEXIST ? -EINVAL
										     : -errno;
		close(fd);
		fd = next;
		p = slash + 1;
	}
	free(copy);
	return fd < 0 ? (fd == -1 ? -errno : fd) : fd;
}

static void set_xattrs(int fd, const struct tar_xattr *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fsetxattr(fd, x[i].name, x[i].value, x[i].len, 0);
}

/* Owner, mode without set-id bits, mtime. */
static int finish_meta(int fd, mode_t mode, struct timespec mtime)
{
	struct timespec ts[2] = {mtime, mtime};

	if (fchown(fd, snap_owner_uid, snap_owner_gid) < 0 ||
	    fchmod(fd, mode & 07777 & ~(mode_t)(S_ISUID | S_ISGID)) < 0 || futimens(fd, ts) < 0)
		return -errno;
	return 0;
}

/* A hard link: the file it names, found beneath the tree without following a link. */
static int make_link(struct snap_import *im, const struct tar_entry *e, int dir, const char *name)
{
	struct open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
	int fd = (int)syscall(SYS_openat2, im->tree, e->link, &how, sizeof(how)), rc = 0;
	char proc[64];
	struct stat st;

	if (fd < 0)
		return -EINVAL; /* no such file earlier in the archive */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		rc = -EINVAL;
	else if (linkat(AT_FDCWD, proc, dir, name, AT_SYMLINK_FOLLOW) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static int on_entry(void *arg, const struct tar_entry *e)
{
	struct snap_import *im = arg;
	struct timespec ts[2] = {e->mtime, e->mtime};
	const char *name;
	struct stat st;
	int dir, rc = 0;

	__atomic_add_fetch(&im->st.files, 1, __ATOMIC_RELAXED);
	if (e->type == TAR_DIR) { /* its attributes once its entries are in */
		im->dirs = xrealloc(im->dirs, (im->ndirs + 1) * sizeof(*im->dirs));
		im->dirs[im->ndirs++] =
		    (struct dir_meta){xstrdup(e->path), e->mode, e->mtime,
				      copy_xattrs(e->xattrs, e->nxattrs), e->nxattrs};
		if (!e->path[0])
			return 0;
	}
	if ((dir = parent_of(im, e->path, &name)) < 0)
		return dir;
	/* A later entry of the same name wins, as tar extracts it; a directory stays one. */
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !(e->type == TAR_DIR && S_ISDIR(st.st_mode)))
		rc = tree_remove(dir, name);
	if (rc < 0) {
		close(dir);
		return rc;
	}
	switch (e->type) {
	case TAR_DIR:
		if (mkdirat(dir, name, 0700) < 0 && errno != EEXIST)
			rc = -errno;
		break;
	case TAR_SYMLINK:
		if (symlinkat(e->link, dir, name) < 0 ||
		    fchownat(dir, name, snap_owner_uid, snap_owner_gid, AT_SYMLINK_NOFOLLOW) < 0 ||
		    utimensat(dir, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
			rc = -errno;
		break;
	case TAR_LINK:
		rc = make_link(im, e, dir, name);
		break;
	default:
		im->file =
		    openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (im->file < 0) {
			rc = -errno;
			break;
		}
		im->off = 0;
		im->cur = *e;
		im->xattrs = copy_xattrs(e->xattrs, e->nxattrs);
		im->nxattrs = e->nxattrs;
	}
	close(dir);
	return rc;
}

static bool all_zero(const char *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* A regular file's data: blocks of zeros are skipped (holes), the rest written. */
static int on_data(void *arg, const char *buf, size_t len)
{
	struct snap_import *im = arg;

	while (len) {
		size_t n = HOLE_BLOCK - im->off % HOLE_BLOCK;

		if (n > len)
			n = len;
		if (!all_zero(buf, n)) {
			if (im->st.copied + n > im->space_left)
				return -ENOSPC;
			if (pwrite(im->file, buf, n, (off_t)im->off) != (ssize_t)n)
				return errno ? -errno : -EIO;
			__atomic_add_fetch(&im->st.copied, n, __ATOMIC_RELAXED);
		}
		__atomic_add_fetch(&im->st.bytes, n, __ATOMIC_RELAXED);
		im->off += n;
		buf += n;
		len -= n;
	}
	return 0;
}

static int on_done(void *arg)
{
	struct snap_import *im = arg;
	int rc = 0;

	if (im->file < 0)
		return 0;
	if (ftruncate(im->file, (off_t)im->cur.size) < 0)
		rc = -errno;
	set_xattrs(im->file, im->xattrs, im->nxattrs);
	if (rc == 0)
		rc = finish_meta(im->file, im->cur.mode, im->cur.mtime);
	close(im->file);
	im->file = -1;
	free_xattrs(im->xattrs, im->nxattrs);
	im->xattrs = NULL;
	return rc;
}

static const struct tar_sink sink = {on_entry, on_data, on_done};

static int feed_tar(void *arg, const char *buf, size_t len)
{
	struct snap_import *im = arg;

	return tarr_feed(im->tr, buf, len);
}

int snapshot_import_begin(const char *name, struct snap_import **out)
{
	struct tar_limits lim = {snap_cfg->snap_import_files, UINT64_MAX};
	struct snap_import *im;
	struct statvfs sv;
	int rc;

	pthread_mutex_lock(&snap_lock);
	rc = snap_may_add_locked(name);
	if (rc < 0) {
		pthread_mutex_unlock(&snap_lock);
		return rc;
	}
	im = xcalloc(1, sizeof(*im));
	im->s = snap_add_locked(name, SS_IMPORTING);
	im->s->refs++;
	im->s->phase = "importing";
	im->s->progress = &im->st;
	im->space_left = snap_cfg->snap_space_max ? snap_cfg->snap_space_max : UINT64_MAX;
	im->space_left -=
	    snap_space_used_locked() < im->space_left ? snap_space_used_locked() : im->space_left;
	if (snap_cfg->snap_files_max) { /* what files_max leaves bounds its entries too */
		uint64_t used = snap_files_used_locked(), max = snap_cfg->snap_files_max;
		uint64_t left = used < max ? max - used : 0;

		if (left < lim.entries)
			lim.entries = left;
	}
	pthread_mutex_unlock(&snap_lock);
	im->file = im->dir = im->tree = -1;
	snap_tmp_name(im->s, im->tmp, sizeof(im->tmp));
	/* A file's declared size may not pass what the snapshots' filesystem holds. */
	if (fstatvfs(snap_dir_fd, &sv) == 0)
		lim.bytes = (uint64_t)sv.f_blocks * sv.f_frsize;
	if (mkdirat(snap_dir_fd, im->tmp, 0700) < 0 ||
	    (im->dir = openat(snap_dir_fd, im->tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    mkdirat(im->dir, "tree", 0700) < 0 ||
	    (im->tree = openat(im->dir, "tree", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    fchown(im->tree, snap_owner_uid, snap_owner_gid) < 0 ||
	    fchmod(im->tree, 0755) < 0) { /* an archive without "./" leaves the top as it is */
		rc = -errno;
		snapshot_import_abort(im);
		return rc;
	}
	im->tr = tarr_new(&lim, &sink, im);
	*out = im;
	return 0;
}

uint32_t snapshot_import_serial(const struct snap_import *im)
{
	return im->s->serial;
}

int snapshot_import_write(struct snap_import *im, const char *buf, size_t len)
{
	if (im->err)
		return im->err;
	/* The first four bytes say which: zstd's magic number, or a tar header's name. */
	while (im->hlen < sizeof(im->head) && len) {
		im->head[im->hlen++] = *buf++;
		len--;
		if (im->hlen < sizeof(im->head))
			continue;
		if (!memcmp(im->head, ZSTD_MAGIC, 4)) {
			if (!snap_zstd_built())
				return im->err = -EOPNOTSUPP;
			im->z = zin_new(feed_tar, im);
			im->err = zin_feed(im->z, im->head, sizeof(im->head));
		} else {
			im->err = tarr_feed(im->tr, im->head, sizeof(im->head));
		}
	}
	if (!im->err && len)
		im->err = im->z ? zin_feed(im->z, buf, len) : tarr_feed(im->tr, buf, len);
	return im->err;
}

static int depth_of(const char *p)
{
	int d = *p != '\0';

	while (*p)
		d += *p++ == '/';
	return d;
}

static int cmp_depth(const void *a, const void *b)
{
	return depth_of(((const struct dir_meta *)b)->path) -
	       depth_of(((const struct dir_meta *)a)->path);
}

/* The directories' attributes, deepest first (a child's change moves its parent's mtime). */
static int finish_dirs(struct snap_import *im)
{
	int rc = 0;

	if (im->ndirs)
		qsort(im->dirs, im->ndirs, sizeof(*im->dirs), cmp_depth);
	for (size_t i = 0; rc == 0 && i < im->ndirs; i++) {
		struct dir_meta *d = &im->dirs[i];
		struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
				       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS};
		int fd = (int)syscall(SYS_openat2, im->tree, d->path[0] ? d->path : ".", &how,
				      sizeof(how));

		if (fd < 0)
			return -errno;
		set_xattrs(fd, d->xattrs, d->nxattrs);
		rc = finish_meta(fd, d->mode, d->mtime);
		close(fd);
	}
	return rc;
}

static void free_import(struct snap_import *im)
{
	if (im->tr)
		tarr_free(im->tr);
	if (im->z)
		zin_free(im->z);
	if (im->file >= 0)
		close(im->file);
	if (im->tree >= 0)
		close(im->tree);
	if (im->dir >= 0)
		close(im->dir);
	free_xattrs(im->xattrs, im->nxattrs);
	for (size_t i = 0; i < im->ndirs; i++) {
		free(im->dirs[i].path);
		free_xattrs(im->dirs[i].xattrs, im->dirs[i].nxattrs);
	}
	free(im->dirs);
	snapshot_unref(im->s);
	free(im);
}

void snapshot_import_abort(struct snap_import *im)
{
	pthread_mutex_lock(&snap_lock);
	im->s->progress = NULL;
	snap_drop_locked(im->s, -ECANCELED);
	pthread_mutex_unlock(&snap_lock);
	free_import(im);
}

int snapshot_import_end(struct snap_import *im)
{
	struct snap_meta m = {0};
	int rc = im->err;

	if (rc == 0 && im->hlen < sizeof(im->head))
		rc = -EINVAL;
	if (rc == 0 && im->z)
		rc = zin_end(im->z);
	if (rc == 0)
		rc = tarr_end(im->tr);
	if (rc == 0)
		rc = finish_dirs(im);
	if (rc == 0) {
		clock_gettime(CLOCK_REALTIME, &m.time);
		m.files = im->st.files;
		m.bytes = im->st.bytes;
		m.space = im->st.copied;
		if ((rc = snap_meta_write(im->dir, &m)) == 0) {
			pthread_mutex_lock(&snap_lock);
			im->s->meta = m;
			pthread_mutex_unlock(&snap_lock);
		}
	}
	if (rc == 0)
		rc = snap_publish(im->s, im->tmp);
	snap_journal("snapshot.import", im->s->name, rc);
	if (rc < 0) {
		snapshot_import_abort(im);
		return rc;
	}
	free_import(im);
	return 0;
}
