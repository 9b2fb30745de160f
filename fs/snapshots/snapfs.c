/* snapshots/ (see snapfs.h): lookup, attributes, listings built at opendir, mkdir (a snapshot
 * taken: answered once it is there) and rmdir; a files/ view's nodes go to snapview.c. */
#include "snapfs.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "dirsnap.h"
#include "nodeattr.h"
#include "park.h"
#include "snapfs_priv.h"
#include "snapshot.h"
#include "xmalloc.h"

/* Fixed names: let the kernel keep them. */
#define FIXED_TIMEOUT 3600.0
#define DIR_MODE      (S_IFDIR | 0755)

/* where: snapshots/'s own names (no snapshot may take them), a snapshot's. */
enum { IN_TOP = 1, IN_SNAP = 2 };

/* A row per kind: its name, its mode (files/'s nodes have their files' own), where it is
 * listed, in the order ls -f shows them, and its line in the mount's README. */
static const struct snap_row {
	const char *name;
	mode_t mode;
	int where;
	const char *path;
	const char *help;
} rows[N_MAX] = {
    [N_DIR] = {"snapshots", DIR_MODE, 0, "snapshots/",
	       "snapshots of the workspace, one directory each"},
    [N_CLONE] = {"clone", S_IFREG | 0444, IN_TOP, NULL,
		 "read it: takes a snapshot, returns its name"},
    [N_CTL] = {"ctl", S_IFREG | 0200, IN_TOP, NULL, "write: restore [force] NAME [DIR]"},
    [N_IMPORT] = {"import", DIR_MODE, IN_TOP, NULL, "where tars are written in"},
    [N_IMPFILE] = {"", S_IFREG | 0200, 0, "snapshots/import/NAME",
		   "write a tar: snapshot NAME at close"},
    [N_SNAP] = {"", DIR_MODE, 0, "snapshots/NAME/",
		"mkdir: the workspace at one instant; rmdir deletes it"},
    [N_STATUS] = {"status", S_IFREG | 0444, IN_SNAP, NULL,
		  "state, time, size, files, space, took_ms, restore, ..."},
    [N_SCTL] = {"ctl", S_IFREG | 0200, IN_SNAP, NULL, "write: restore [force] [DIR]"},
    [N_ARCHIVE] = {"archive", S_IFREG | 0444, IN_SNAP, NULL, "the snapshot as a tar"},
    [N_NODE] = {"files", DIR_MODE, IN_SNAP, NULL, "the snapshot's files, read-only"},
};

/* The kind of the name in a directory that lists the rows of where, or N_MAX. */
static enum snap_kind named(const char *name, int where)
{
	for (int k = 0; k < N_MAX; k++)
		if ((rows[k].where & where) && !strcmp(name, rows[k].name))
			return (enum snap_kind)k;
	return N_MAX;
}

static void list_rows(struct dirsnap *d, uint32_t serial, int where)
{
	for (int k = 0; k < N_MAX; k++)
		if (rows[k].where & where)
			dirsnap_add(d, rows[k].name, snap_ino(serial, k, 0), rows[k].mode & S_IFMT);
}

void snap_help(struct help *h)
{
	for (int k = 0; k < N_MAX; k++) {
		if (rows[k].path)
			help_add(h, rows[k].path, "", false, rows[k].help);
		if (rows[k].where & IN_TOP)
			help_add(h, "snapshots/", rows[k].name, S_ISDIR(rows[k].mode),
				 rows[k].help);
		if (rows[k].where & IN_SNAP)
			help_add(h, "snapshots/NAME/", rows[k].name, S_ISDIR(rows[k].mode),
				 rows[k].help);
	}
}

fuse_ino_t snapfs_root_ino(void)
{
	return snap_ino(0, N_DIR, 0);
}

int snapfs_stat(fuse_ino_t ino, struct stat *st)
{
	enum snap_kind k = snap_ino_kind(ino);
	struct snapshot *s = NULL;
	struct timespec t;
	char *text;
	size_t len;

	if (k == N_NODE)
		return snapview_stat(ino, st);
	if (k >= N_MAX)
		return -ENOENT;
	if (snap_ino_serial(ino) && !(s = snapshot_find_serial(snap_ino_serial(ino))))
		return -ENOENT;
	if (s)
		t = snapshot_time(s);
	nodeattr_init(st, ino, rows[k].mode, s ? &t : NULL);
	if (k == N_STATUS) { /* its size now, as a read would see it */
		text = snapshot_status(s, &len);
		st->st_size = (off_t)len;
		free(text);
	}
	nodeattr_blocks(st);
	if (s)
		snapshot_unref(s);
	return 0;
}

static double timeout_of(fuse_ino_t ino)
{
	switch (snap_ino_kind(ino)) {
	case N_DIR:
	case N_CLONE:
	case N_CTL:
	case N_IMPORT:
		return FIXED_TIMEOUT;
	default: /* a snapshot deleted and made again under its name is a new one */
		return 0;
	}
}

void snapfs_reply_entry(fuse_req_t req, fuse_ino_t ino)
{
	struct fuse_entry_param e = {.ino = ino, .entry_timeout = timeout_of(ino)};
	int rc = snapfs_stat(ino, &e.attr);

	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_entry(req, &e);
}

int snapfs_root_entry(struct fuse_entry_param *e)
{
	*e = (struct fuse_entry_param){.ino = snapfs_root_ino(), .entry_timeout = FIXED_TIMEOUT};
	return snapfs_stat(e->ino, &e->attr);
}

/* A snapshot's serial by name, in the state given: 0 if there is none. */
static uint32_t serial_of(const char *name, bool importing)
{
	struct snapshot *s = snapshot_find(name);
	uint32_t serial = 0;

	if (s && snapshot_importing(s) == importing)
		serial = snapshot_serial(s);
	if (s)
		snapshot_unref(s);
	return serial;
}

static void snapfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	uint32_t serial = snap_ino_serial(parent);
	struct fuse_entry_param e = {0};
	int rc;

	switch (snap_ino_kind(parent)) {
	case N_DIR:
		if (named(name, IN_TOP) != N_MAX) {
			snapfs_reply_entry(req, snap_ino(0, named(name, IN_TOP), 0));
			return;
		}
		serial = serial_of(name, false);
		if (serial)
			snapfs_reply_entry(req, snap_ino(serial, N_SNAP, 0));
		else
			fuse_reply_err(req, ENOENT);
		return;
	case N_IMPORT:
		serial = serial_of(name, true);
		if (serial)
			snapfs_reply_entry(req, snap_ino(serial, N_IMPFILE, 0));
		else
			fuse_reply_err(req, ENOENT);
		return;
	case N_SNAP:
		if (named(name, IN_SNAP) != N_MAX)
			snapfs_reply_entry(req, snap_ino(serial, named(name, IN_SNAP), 0));
		else
			fuse_reply_err(req, ENOENT);
		return;
	case N_NODE:
		if ((rc = snapview_lookup(parent, name, &e)) < 0)
			fuse_reply_err(req, -rc);
		else
			fuse_reply_entry(req, &e);
		return;
	default:
		fuse_reply_err(req, ENOTDIR);
	}
}

static void snapfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	int rc = snapfs_stat(ino, &st);

	(void)fi;
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, snap_ino_kind(ino) == N_NODE ? 3600.0 : 0);
}

static void snapfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			   struct fuse_file_info *fi)
{
	enum snap_kind k = snap_ino_kind(ino);

	/* `echo restore > ctl` and `cat x.tar > import/NAME` truncate: a no-op there. */
	if (k == N_NODE) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (k >= N_MAX || !nodeattr_settable(rows[k].mode, attr, to_set)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	snapfs_getattr(req, ino, fi);
}

/* Set while the host is to follow no link here and no nosymfollow mount covers snapshots/ yet
 * (the guard's, fs/guard.c): the files/ views then give no link's target, as that mount would
 * refuse to follow one. */
static atomic_bool hold_links;

void snapfs_hold_links(bool hold)
{
	atomic_store(&hold_links, hold);
}

static void snapfs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	if (snap_ino_kind(ino) == N_NODE && atomic_load(&hold_links))
		fuse_reply_err(req, ELOOP);
	else if (snap_ino_kind(ino) == N_NODE)
		snapview_readlink(req, ino);
	else
		fuse_reply_err(req, EINVAL);
}

struct mkdir_wait {
	struct ticket *done;
	struct snapshot *s;
	bool answered;
};

static int mkdir_attempt(struct park *p)
{
	struct mkdir_wait *mw = park_arg(p);
	int result;

	if (ticket_wait(mw->done, &result, park_waiter(p)) < 0)
		return -EAGAIN;
	mw->answered = true;
	if (result < 0)
		fuse_reply_err(park_req(p), -result);
	else
		snapfs_reply_entry(park_req(p), snap_ino(snapshot_serial(mw->s), N_SNAP, 0));
	return 0;
}

/* An interrupted mkdir (Ctrl-C) cancels its snapshot: nothing of it is left. */
static void mkdir_wait_free(void *arg)
{
	struct mkdir_wait *mw = arg;

	if (!mw->answered)
		snapshot_cancel(mw->s);
	snapshot_unref(mw->s);
	ticket_unref(mw->done);
	free(mw);
}

static void snapfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct mkdir_wait *mw;
	struct ticket *done;
	int rc;

	(void)mode;
	if (snap_ino_kind(parent) != N_DIR) {
		fuse_reply_err(req, snap_ino_kind(parent) == N_NODE ? EROFS : EPERM);
		return;
	}
	if (!strcmp(name, "clone") || !strcmp(name, "ctl") || !strcmp(name, "import")) {
		fuse_reply_err(req, EEXIST);
		return;
	}
	if ((rc = snapshot_take(name, &done)) < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	mw = xcalloc(1, sizeof(*mw));
	mw->done = done;
	mw->s = snapshot_find(name);
	if (!mw->s) { /* failed already, and gone: the ticket says why */
		int result = -ENOENT;

		ticket_wait(done, &result, NULL);
		ticket_unref(done);
		free(mw);
		fuse_reply_err(req, -result);
		return;
	}
	park_request(req, mkdir_attempt, mw, mkdir_wait_free);
}

static void snapfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (snap_ino_kind(parent) != N_DIR)
		fuse_reply_err(req, snap_ino_kind(parent) == N_NODE ? EROFS : EPERM);
	else if (!strcmp(name, "clone") || !strcmp(name, "ctl"))
		fuse_reply_err(req, ENOTDIR);
	else if (!strcmp(name, "import"))
		fuse_reply_err(req, EBUSY);
	else
		fuse_reply_err(req, -snapshot_remove(name));
}

static void list_root(struct dirsnap *d)
{
	struct snapshot_info *v;
	size_t n = snapshot_list(&v);

	list_rows(d, 0, IN_TOP);
	for (size_t i = 0; i < n; i++)
		if (!v[i].importing)
			dirsnap_add(d, v[i].name, snap_ino(v[i].serial, N_SNAP, 0), S_IFDIR);
	free(v);
}

static void list_imports(struct dirsnap *d)
{
	struct snapshot_info *v;
	size_t n = snapshot_list(&v);

	for (size_t i = 0; i < n; i++)
		if (v[i].importing)
			dirsnap_add(d, v[i].name, snap_ino(v[i].serial, N_IMPFILE, 0), S_IFREG);
	free(v);
}

/* Readdirplus entries count a lookup; the view's keep their attributes long. */
static void plus_fill(const struct dirsnap_entry *de, struct fuse_entry_param *e)
{
	struct stat st;

	if (snapfs_stat(de->ino, &st) < 0)
		return;
	e->attr = st;
	e->ino = de->ino;
	if (snap_ino_kind(de->ino) == N_NODE)
		e->attr_timeout = e->entry_timeout = 3600.0;
}

static const struct dirsnap_plus snap_plus = {plus_fill, NULL};

static void snapfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	uint32_t serial = snap_ino_serial(ino);
	struct dirsnap *d = NULL;
	struct stat st;
	int rc = snapfs_stat(ino, &st);

	if (rc == 0 && !S_ISDIR(st.st_mode))
		rc = -ENOTDIR;
	if (rc == 0 && snap_ino_kind(ino) == N_NODE)
		rc = snapview_list(ino, &d);
	else if (rc == 0 && snap_ino_kind(ino) == N_SNAP) {
		d = dirsnap_new(ino, snapfs_root_ino());
		list_rows(d, serial, IN_SNAP);
	} else if (rc == 0) {
		d = dirsnap_new(ino,
				snap_ino_kind(ino) == N_DIR ? FUSE_ROOT_ID : snapfs_root_ino());
		if (snap_ino_kind(ino) == N_DIR)
			list_root(d);
		else
			list_imports(d);
	}
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		dirsnap_open(req, d, &snap_plus, fi);
}

static void snapfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	if (snap_ino_kind(ino) == N_NODE)
		snapview_getxattr(req, ino, name, size);
	else
		fuse_reply_err(req, ENODATA);
}

static void snapfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	if (snap_ino_kind(ino) == N_NODE)
		snapview_listxattr(req, ino, size);
	else if (size == 0)
		fuse_reply_xattr(req, 0);
	else
		fuse_reply_buf(req, NULL, 0);
}

/* A view's files are read-only; the control files have no attributes. */
static void snapfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			    size_t size, int flags)
{
	(void)name;
	(void)value;
	(void)size;
	(void)flags;
	fuse_reply_err(req, snap_ino_kind(ino) == N_NODE ? EROFS : ENOTSUP);
}

const struct fuse_lowlevel_ops snap_ops = {
    .lookup = snapfs_lookup,
    .getattr = snapfs_getattr,
    .setattr = snapfs_setattr,
    .readlink = snapfs_readlink,
    .mkdir = snapfs_mkdir,
    .rmdir = snapfs_rmdir,
    .create = snapfs_create,
    .open = snapfs_open,
    .read = snapfs_read,
    .write = snapfs_write,
    .flush = snapfs_flush,
    .release = snapfs_release,
    .lseek = snapfs_lseek,
    .opendir = snapfs_opendir,
    .readdir = dirsnap_readdir,
    .readdirplus = dirsnap_readdirplus,
    .releasedir = dirsnap_releasedir,
    .setxattr = snapfs_setxattr,
    .getxattr = snapfs_getxattr,
    .listxattr = snapfs_listxattr,
};
