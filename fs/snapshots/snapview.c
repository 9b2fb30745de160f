/* The files/ view of a snapshot, a part of its own (view_ops): its tree, read-only. Each file the
 * kernel is told of gets a node number in the snapshot's table (by its inode in the tree, so hard
 * links share one) with its path in the tree; a snapshot never changes, so the path stays good
 * until the snapshot is deleted, and every access opens it again beneath the tree without following
 * a link. Owners show as in workspace/ (the same id swap), set-id bits never. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "dirsnap.h"
#include "idmap.h"
#include "inomap.h"
#include "snapfs_priv.h"
#include "snapshot.h"
#include "xmalloc.h"

/* A snapshot never changes: let the kernel keep what it learns. */
#define VIEW_TIMEOUT 3600.0

fuse_ino_t snapview_root_ino(uint32_t serial)
{
	return view_ino(serial, 0);
}

struct view {
	uint32_t serial;
	struct snapshot *s;
	int tree;
	int refs;	      /* views_lock */
	pthread_mutex_t lock; /* the nodes */
	char **paths;	      /* by node: the path in the tree ("" for files/ itself) */
	uint64_t *parents;
	size_t n, cap;
	struct inomap byino; /* the tree's inode: its node */
	struct view *next;
};

static pthread_mutex_t views_lock = PTHREAD_MUTEX_INITIALIZER;
static struct view *views;

static void view_free(struct view *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->paths[i]);
	free(v->paths);
	free(v->parents);
	inomap_clear(&v->byino);
	pthread_mutex_destroy(&v->lock);
	snapshot_unref(v->s);
	free(v);
}

static void view_put(struct view *v)
{
	bool last;

	pthread_mutex_lock(&views_lock);
	last = --v->refs == 0;
	pthread_mutex_unlock(&views_lock);
	if (last)
		view_free(v);
}

/* Views of snapshots deleted since: out of the list (views_lock held). */
static void purge_locked(void)
{
	for (struct view **p = &views, *v; (v = *p);) {
		struct snapshot *s = snapshot_find_serial(v->serial);

		if (s) {
			snapshot_unref(s);
			p = &v->next;
			continue;
		}
		*p = v->next;
		if (--v->refs == 0)
			view_free(v);
	}
}

/* The view of snapshot serial (referenced), made at its first use: NULL when the snapshot is
 * gone or not taken yet. */
static struct view *view_get(uint32_t serial)
{
	struct snapshot *s = snapshot_find_serial(serial);
	struct view *v;
	int tree;

	if (!s)
		return NULL;
	pthread_mutex_lock(&views_lock);
	for (v = views; v && v->serial != serial; v = v->next)
		;
	if (!v && (tree = snapshot_tree(s)) >= 0) {
		purge_locked();
		v = xcalloc(1, sizeof(*v));
		v->serial = serial;
		v->s = s;
		snapshot_ref(s);
		v->tree = tree;
		v->refs = 1; /* the list's */
		pthread_mutex_init(&v->lock, NULL);
		inomap_init(&v->byino);
		v->paths = xmalloc(sizeof(char *));
		v->parents = xmalloc(sizeof(uint64_t));
		v->paths[0] = xstrdup("");
		v->parents[0] = 0;
		v->n = v->cap = 1;
		v->next = views;
		views = v;
	}
	if (v)
		v->refs++;
	pthread_mutex_unlock(&views_lock);
	snapshot_unref(s);
	return v;
}

/* node's path (a copy), or NULL for a node the view never gave. */
static char *node_path(struct view *v, uint64_t node, uint64_t *parent)
{
	char *path = NULL;

	pthread_mutex_lock(&v->lock);
	if (node < v->n) {
		path = xstrdup(v->paths[node]);
		if (parent)
			*parent = v->parents[node];
	}
	pthread_mutex_unlock(&v->lock);
	return path;
}

/* The node of the tree's file st at path (its first path, if it has several names). */
static uint64_t node_of(struct view *v, const struct stat *st, const char *path, uint64_t parent)
{
	struct inomap_slot *slot;
	uint64_t node;

	pthread_mutex_lock(&v->lock);
	slot = inomap_get(&v->byino, st->st_dev, st->st_ino);
	if (slot) {
		node = slot->value;
	} else if (v->n > SNAP_NODE_MAX) {
		node = 0; /* past half a billion: files/ itself stands in */
	} else {
		if (v->n == v->cap) {
			v->cap *= 2;
			v->paths = xrealloc(v->paths, v->cap * sizeof(char *));
			v->parents = xrealloc(v->parents, v->cap * sizeof(uint64_t));
		}
		node = v->n++;
		v->paths[node] = xstrdup(path);
		v->parents[node] = parent;
		inomap_put(&v->byino, st->st_dev, st->st_ino)->value = node;
	}
	pthread_mutex_unlock(&v->lock);
	return node;
}

/* path beneath the tree, never through a link: an fd or -errno. */
static int open_beneath(struct view *v, const char *path, int flags)
{
	struct open_how how = {.flags = (uint64_t)flags | O_NOFOLLOW | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
	int fd = (int)syscall(SYS_openat2, v->tree, path[0] ? path : ".", &how, sizeof(how));

	return fd < 0 ? -errno : fd;
}

/* What the kernel is shown of a file of the tree. */
static void shown(struct stat *st, fuse_ino_t ino)
{
	st->st_ino = ino;
	if (!S_ISDIR(st->st_mode))
		st->st_mode &= ~(mode_t)(S_ISUID | S_ISGID);
	idmap_stat(st);
}

/* The node ino's view (referenced) and path: 0, or -ENOENT. */
static int resolve(fuse_ino_t ino, struct view **v, char **path, uint64_t *parent)
{
	*v = view_get(view_ino_serial(ino));
	if (!*v)
		return -ENOENT;
	*path = node_path(*v, view_ino_node(ino), parent);
	if (*path)
		return 0;
	view_put(*v);
	return -ENOENT;
}

int snapview_stat(fuse_ino_t ino, struct stat *st)
{
	struct view *v;
	char *path;
	int fd, rc = resolve(ino, &v, &path, NULL);

	if (rc < 0)
		return rc;
	fd = open_beneath(v, path, O_PATH);
	if (fd < 0 || fstat(fd, st) < 0)
		rc = fd < 0 ? fd : -errno;
	else
		shown(st, ino);
	if (fd >= 0)
		close(fd);
	free(path);
	view_put(v);
	return rc;
}

static int lookup(fuse_ino_t parent, const char *name, struct fuse_entry_param *e)
{
	uint64_t pnode = view_ino_node(parent);
	struct view *v;
	char *dir, *path;
	int fd, rc = resolve(parent, &v, &dir, NULL);

	if (rc < 0)
		return rc;
	path = dir[0] ? xasprintf("%s/%s", dir, name) : xstrdup(name);
	if (strlen(path) >= PATH_MAX || strchr(name, '/'))
		rc = -ENAMETOOLONG;
	else if ((fd = open_beneath(v, path, O_PATH)) < 0)
		rc = fd;
	else if (fstat(fd, &e->attr) < 0)
		rc = -errno, close(fd);
	else
		close(fd);
	if (rc == 0) {
		e->ino = view_ino(view_ino_serial(parent), node_of(v, &e->attr, path, pnode));
		shown(&e->attr, e->ino);
		e->attr_timeout = e->entry_timeout = VIEW_TIMEOUT;
	}
	free(dir);
	free(path);
	view_put(v);
	return rc;
}

static void readlink_node(fuse_req_t req, fuse_ino_t ino)
{
	char target[PATH_MAX + 1], *path;
	struct view *v;
	ssize_t n = -1;
	int fd, rc = resolve(ino, &v, &path, NULL);

	if (rc == 0) {
		fd = open_beneath(v, path, O_PATH);
		n = fd < 0 ? fd : readlinkat(fd, "", target, PATH_MAX);
		rc = n < 0 ? (fd < 0 ? fd : -errno) : 0;
		if (fd >= 0)
			close(fd);
		free(path);
		view_put(v);
	}
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	target[n] = '\0';
	fuse_reply_readlink(req, target);
}

static int list(fuse_ino_t ino, struct dirsnap **out)
{
	uint32_t serial = view_ino_serial(ino);
	uint64_t node = view_ino_node(ino), parent;
	struct dirent *de;
	struct view *v;
	char *dir;
	DIR *d;
	int fd, rc = resolve(ino, &v, &dir, &parent);

	if (rc < 0)
		return rc;
	fd = open_beneath(v, dir, O_RDONLY | O_DIRECTORY);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		rc = fd < 0 ? fd : -errno;
		if (fd >= 0)
			close(fd);
		free(dir);
		view_put(v);
		return rc;
	}
	*out = dirsnap_new(ino, node ? view_ino(serial, parent) : snap_ino(serial, N_SNAP));
	while ((de = readdir(d))) {
		struct stat st;
		char *path;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		path = dir[0] ? xasprintf("%s/%s", dir, de->d_name) : xstrdup(de->d_name);
		dirsnap_add(*out, de->d_name, view_ino(serial, node_of(v, &st, path, node)),
			    st.st_mode & S_IFMT);
		free(path);
	}
	closedir(d);
	free(dir);
	view_put(v);
	return 0;
}

int snapview_open(fuse_ino_t ino)
{
	struct view *v;
	char *path;
	int fd = resolve(ino, &v, &path, NULL);

	if (fd < 0)
		return fd;
	fd = open_beneath(v, path, O_RDONLY);
	free(path);
	view_put(v);
	return fd;
}

/* A file's attribute (user.* only) by its open fd. */
static void xattr_reply(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size, bool list)
{
	char *buf = size ? xmalloc(size) : NULL;
	struct view *v;
	char *path;
	ssize_t n;
	int fd = resolve(ino, &v, &path, NULL);

	if (fd >= 0) {
		fd = open_beneath(v, path, O_RDONLY | O_NONBLOCK);
		free(path);
		view_put(v);
	}
	if (fd == -ELOOP) { /* a symlink: no attributes */
		n = list ? 0 : -ENODATA;
	} else if (fd < 0) {
		n = fd;
	} else {
		n = list			? flistxattr(fd, buf, size)
		    : strncmp(name, "user.", 5) ? (errno = ENODATA, -1)
						: fgetxattr(fd, name, buf, size);
		if (n < 0)
			n = -errno;
		close(fd);
	}
	if (n >= 0 && list) { /* keep user.* names */
		char *o = buf;

		for (char *p = buf; p && p < buf + n; p += strlen(p) + 1)
			if (!strncmp(p, "user.", 5))
				o += strlen(strcpy(o, p)) + 1;
		n = buf ? o - buf : n;
	}
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void view_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	xattr_reply(req, ino, name, size, false);
}

static void view_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	xattr_reply(req, ino, NULL, size, true);
}

void snapview_shutdown(void)
{
	struct view *v;

	pthread_mutex_lock(&views_lock);
	while ((v = views)) {
		views = v->next;
		if (--v->refs == 0)
			view_free(v);
	}
	pthread_mutex_unlock(&views_lock);
}

/* The view's own part: everything in files/ is read-only (fs/ops.c answers EROFS for what
 * would change it). */

static void view_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e = {0};
	int rc = lookup(parent, name, &e);

	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_entry(req, &e);
}

static void view_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	int rc = snapview_stat(ino, &st);

	(void)fi;
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, VIEW_TIMEOUT);
}

/* Set while the host is to follow no link here and no nosymfollow mount covers snapshots/ yet
 * (the guard's, fs/guard.c): the views then give no link's target, as that mount would refuse
 * to follow one. */
static atomic_bool hold_links;

void snapfs_hold_links(bool hold)
{
	atomic_store(&hold_links, hold);
}

static void view_readlink(fuse_req_t req, fuse_ino_t ino)
{
	if (atomic_load(&hold_links))
		fuse_reply_err(req, ELOOP);
	else
		readlink_node(req, ino);
}

static void view_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			  size_t size, int flags)
{
	(void)ino;
	(void)name;
	(void)value;
	(void)size;
	(void)flags;
	fuse_reply_err(req, EROFS);
}

/* Readdirplus entries count a lookup and keep their attributes long. */
static void plus_fill(const struct dirsnap_entry *de, struct fuse_entry_param *e)
{
	struct stat st;

	if (snapview_stat(de->ino, &st) < 0)
		return;
	e->attr = st;
	e->ino = de->ino;
	e->attr_timeout = e->entry_timeout = VIEW_TIMEOUT;
}

static const struct dirsnap_plus view_plus = {plus_fill, NULL};

static void view_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dirsnap *d = NULL;
	struct stat st;
	int rc = snapview_stat(ino, &st);

	if (rc == 0 && !S_ISDIR(st.st_mode))
		rc = -ENOTDIR;
	if (rc == 0)
		rc = list(ino, &d);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		dirsnap_open(req, d, &view_plus, fi);
}

const struct fuse_lowlevel_ops view_ops = {
    .lookup = view_lookup,
    .getattr = view_getattr,
    .readlink = view_readlink,
    .open = snapfile_open_view,
    .read = snapfs_read,
    .flush = snapfs_flush,
    .release = snapfs_release,
    .lseek = snapfs_lseek,
    .opendir = view_opendir,
    .readdir = dirsnap_readdir,
    .readdirplus = dirsnap_readdirplus,
    .releasedir = dirsnap_releasedir,
    .setxattr = view_setxattr,
    .getxattr = view_getxattr,
    .listxattr = view_listxattr,
};
