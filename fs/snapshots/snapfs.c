/* snapshots/ (see snapfs.h): lookup, attributes, listings built at opendir, mkdir (a snapshot
 * taken: answered once it is there) and rmdir, from a row per kind; each snapshot's files/ is
 * the view's part (snapview.c). */
#include "snapfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dirsnap.h"
#include "nodeattr.h"
#include "park.h"
#include "refusals.h"
#include "snapfs_priv.h"
#include "snapshot.h"
#include "xmalloc.h"

/* Fixed names: let the kernel keep them. */
#define FIXED_TIMEOUT 3600.0
#define DIR_MODE      (S_IFDIR | 0755)

/* where: snapshots/'s own names (no snapshot may take them), a snapshot's. */
enum { IN_TOP = 1, IN_SNAP = 2 };

struct snap_row {
	const char *name;
	mode_t mode;
	int where;
	const char *path; /* its README path when its directory does not say it */
	const char *help;
	/* Comes and goes (a snapshot and what is in it): the kernel keeps its name 0 s. */
	bool transient;
	/* A directory: its names (lookup and list; NULL: the rows of its where) and its "..". */
	int holds;
	void (*lookup)(fuse_req_t req, fuse_ino_t parent, const char *name);
	void (*list)(struct dirsnap *d, fuse_ino_t ino);
	fuse_ino_t (*parent)(fuse_ino_t ino);
	void (*mkdir)(fuse_req_t req, const char *name);
	void (*rmdir)(fuse_req_t req, const char *name);
	/* Another part's directory listed here (files/): its inode in snapshot serial. */
	fuse_ino_t (*served)(uint32_t serial);
	/* The size now of a file whose size is its text's (status). */
	char *(*text)(struct snapshot *s, size_t *len);
};

static const struct snap_row *row_of(enum snap_kind k);

/* The inode of the name of kind k in snapshot serial's directory (or snapshots/'s). */
static fuse_ino_t named_ino(uint32_t serial, enum snap_kind k)
{
	return row_of(k)->served ? row_of(k)->served(serial) : snap_ino(serial, k);
}

/* The kind of the name in a directory that lists the rows of where, or N_MAX. */
static enum snap_kind named(const char *name, int where)
{
	for (int k = 0; k < N_MAX; k++)
		if ((row_of(k)->where & where) && !strcmp(name, row_of(k)->name))
			return (enum snap_kind)k;
	return N_MAX;
}

static void list_rows(struct dirsnap *d, uint32_t serial, int where)
{
	for (int k = 0; k < N_MAX; k++)
		if (row_of(k)->where & where)
			dirsnap_add(d, row_of(k)->name, named_ino(serial, k),
				    row_of(k)->mode & S_IFMT);
}

void snap_help(struct help *h)
{
	for (int k = 0; k < N_MAX; k++) {
		const struct snap_row *r = row_of(k);

		if (r->path)
			help_add(h, r->path, "", false, r->help);
		if (r->where & IN_TOP)
			help_add(h, "snapshots/", r->name, S_ISDIR(r->mode), r->help);
		if (r->where & IN_SNAP)
			help_add(h, "snapshots/NAME/", r->name, S_ISDIR(r->mode), r->help);
	}
}

fuse_ino_t snapfs_root_ino(void)
{
	return snap_ino(0, N_DIR);
}

int snapfs_stat(fuse_ino_t ino, struct stat *st)
{
	const struct snap_row *r = row_of(snap_ino_kind(ino));
	struct snapshot *s = NULL;
	struct timespec t;
	char *text;
	size_t len;

	if (!r->mode || r->served)
		return -ENOENT;
	if (snap_ino_serial(ino) && !(s = snapshot_find_serial(snap_ino_serial(ino))))
		return -ENOENT;
	if (s)
		t = snapshot_time(s);
	nodeattr_init(st, ino, r->mode, s ? &t : NULL);
	if (r->text) { /* its size now, as a read would see it */
		text = r->text(s, &len);
		st->st_size = (off_t)len;
		free(text);
	}
	nodeattr_blocks(st);
	if (s)
		snapshot_unref(s);
	return 0;
}

/* The entry of ino, a view's files/ included: a snapshot deleted and made again under its
 * name is a new one. */
static int entry_of(fuse_ino_t ino, struct fuse_entry_param *e)
{
	*e = (struct fuse_entry_param){.ino = ino};
	if (ino_part(ino) == PART_SNAPVIEW)
		return snapview_stat(ino, &e->attr);
	e->entry_timeout = row_of(snap_ino_kind(ino))->transient ? 0 : FIXED_TIMEOUT;
	return snapfs_stat(ino, &e->attr);
}

void snapfs_reply_entry(fuse_req_t req, fuse_ino_t ino)
{
	struct fuse_entry_param e;
	int rc = entry_of(ino, &e);

	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_entry(req, &e);
}

int snapfs_root_entry(struct fuse_entry_param *e)
{
	return entry_of(snapfs_root_ino(), e);
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

static void lookup_snapshot(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	uint32_t serial = serial_of(name, false);

	(void)parent;
	if (serial)
		snapfs_reply_entry(req, snap_ino(serial, N_SNAP));
	else
		fuse_reply_err(req, ENOENT);
}

static void lookup_import(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	uint32_t serial = serial_of(name, true);

	(void)parent;
	if (serial)
		snapfs_reply_entry(req, snap_ino(serial, N_IMPFILE));
	else
		fuse_reply_err(req, ENOENT);
}

/* A directory's own names first (the rows of its holds), then what its lookup finds. */
static void snapfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	const struct snap_row *r = row_of(snap_ino_kind(parent));
	enum snap_kind k = r->holds ? named(name, r->holds) : N_MAX;

	if (!S_ISDIR(r->mode))
		fuse_reply_err(req, ENOTDIR);
	else if (k != N_MAX)
		snapfs_reply_entry(req, named_ino(snap_ino_serial(parent), k));
	else if (r->lookup)
		r->lookup(req, parent, name);
	else
		fuse_reply_err(req, ENOENT);
}

static void snapfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	int rc = snapfs_stat(ino, &st);

	(void)fi;
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, 0);
}

/* `echo restore > ctl` and `cat x.tar > import/NAME` truncate: a no-op there. */
static void snapfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			   struct fuse_file_info *fi)
{
	if (!nodeattr_settable(row_of(snap_ino_kind(ino))->mode, attr, to_set)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	snapfs_getattr(req, ino, fi);
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
		snapfs_reply_entry(park_req(p), snap_ino(snapshot_serial(mw->s), N_SNAP));
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

/* mkdir snapshots/NAME takes one; it answers once the snapshot is there. */
static void mkdir_snapshot(fuse_req_t req, const char *name)
{
	struct mkdir_wait *mw;
	struct ticket *done;
	int rc;

	if (named(name, IN_TOP) != N_MAX) {
		fuse_reply_err(req, EEXIST);
		return;
	}
	if ((rc = snapshot_take(name, &done)) < 0) {
		if (rc == -EINVAL) {
			char *path = xasprintf("snapshots/%s", name);

			refusal_note(
			    path, EINVAL,
			    "a snapshot's name is 1 to 64 of A-Z a-z 0-9 . _ -, not first a .");
			free(path);
		}
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

static void rmdir_snapshot(fuse_req_t req, const char *name)
{
	enum snap_kind k = named(name, IN_TOP);

	if (k != N_MAX)
		fuse_reply_err(req, S_ISDIR(row_of(k)->mode) ? EBUSY : ENOTDIR);
	else
		fuse_reply_err(req, -snapshot_remove(name));
}

static void snapfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	const struct snap_row *r = row_of(snap_ino_kind(parent));

	(void)mode;
	if (r->mkdir)
		r->mkdir(req, name);
	else
		fuse_reply_err(req, EPERM);
}

static void snapfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	const struct snap_row *r = row_of(snap_ino_kind(parent));

	if (r->rmdir)
		r->rmdir(req, name);
	else
		fuse_reply_err(req, EPERM);
}

/* The snapshots taken (in snapshots/) or being imported (in import/). */
static void list_snapshots(struct dirsnap *d, bool importing)
{
	struct snapshot_info *v;
	size_t n = snapshot_list(&v);

	for (size_t i = 0; i < n; i++)
		if (v[i].importing == importing)
			dirsnap_add(d, v[i].name,
				    snap_ino(v[i].serial, importing ? N_IMPFILE : N_SNAP),
				    importing ? S_IFREG : S_IFDIR);
	free(v);
}

static void list_taken(struct dirsnap *d, fuse_ino_t ino)
{
	(void)ino;
	list_snapshots(d, false);
}

static void list_imports(struct dirsnap *d, fuse_ino_t ino)
{
	(void)ino;
	list_snapshots(d, true);
}

static fuse_ino_t at_root(fuse_ino_t ino)
{
	(void)ino;
	return FUSE_ROOT_ID;
}

static fuse_ino_t in_snapshots(fuse_ino_t ino)
{
	(void)ino;
	return snapfs_root_ino();
}

/* Readdirplus entries count a lookup; files/ gets none (the kernel looks it up). */
static void plus_fill(const struct dirsnap_entry *de, struct fuse_entry_param *e)
{
	struct stat st;

	if (ino_part(de->ino) != PART_SNAPSHOTS || snapfs_stat(de->ino, &st) < 0)
		return;
	e->attr = st;
	e->ino = de->ino;
}

static const struct dirsnap_plus snap_plus = {plus_fill, NULL};

static void snapfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	const struct snap_row *r = row_of(snap_ino_kind(ino));
	struct dirsnap *d;
	struct stat st;
	int rc = snapfs_stat(ino, &st);

	if (rc == 0 && !S_ISDIR(st.st_mode))
		rc = -ENOTDIR;
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	d = dirsnap_new(ino, r->parent(ino));
	if (r->holds)
		list_rows(d, snap_ino_serial(ino), r->holds);
	if (r->list)
		r->list(d, ino);
	dirsnap_open(req, d, &snap_plus, fi);
}

/* The control files have no attributes (and say so: ENOSYS would stop the kernel asking the
 * views too). */
static void snapfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	(void)ino;
	(void)name;
	(void)size;
	fuse_reply_err(req, ENODATA);
}

static void snapfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	(void)ino;
	if (size == 0)
		fuse_reply_xattr(req, 0);
	else
		fuse_reply_buf(req, NULL, 0);
}

static const struct snap_row rows[N_MAX] = {
    [N_DIR] = {.name = "snapshots",
	       .mode = DIR_MODE,
	       .path = "snapshots/",
	       .help = "snapshots of the workspace, one directory each",
	       .holds = IN_TOP,
	       .lookup = lookup_snapshot,
	       .list = list_taken,
	       .parent = at_root,
	       .mkdir = mkdir_snapshot,
	       .rmdir = rmdir_snapshot},
    [N_CLONE] = {.name = "clone",
		 .mode = S_IFREG | 0444,
		 .where = IN_TOP,
		 .help = "read it: takes a snapshot, returns its name"},
    [N_CTL] = {.name = "ctl",
	       .mode = S_IFREG | 0200,
	       .where = IN_TOP,
	       .help = "write: restore [force] NAME [DIR] | take NAME [DIR]"},
    [N_IMPORT] = {.name = "import",
		  .mode = DIR_MODE,
		  .where = IN_TOP,
		  .help = "where tars are written in",
		  .lookup = lookup_import,
		  .list = list_imports,
		  .parent = in_snapshots},
    [N_IMPFILE] = {.name = "",
		   .mode = S_IFREG | 0200,
		   .path = "snapshots/import/NAME",
		   .help = "write a tar: snapshot NAME at close",
		   .transient = true},
    [N_SNAP] = {.name = "",
		.mode = DIR_MODE,
		.path = "snapshots/NAME/",
		.help = "mkdir: the workspace at one instant; rmdir deletes it",
		.transient = true,
		.holds = IN_SNAP,
		.parent = in_snapshots},
    [N_STATUS] = {.name = "status",
		  .mode = S_IFREG | 0444,
		  .where = IN_SNAP,
		  .help = "state, time, size, files, space, took_ms, root, restore, ...",
		  .transient = true,
		  .text = snapshot_status},
    [N_SCTL] = {.name = "ctl",
		.mode = S_IFREG | 0200,
		.where = IN_SNAP,
		.help = "write: restore [force] [DIR]",
		.transient = true},
    [N_ARCHIVE] = {.name = "archive",
		   .mode = S_IFREG | 0444,
		   .where = IN_SNAP,
		   .help = "the snapshot as a tar",
		   .transient = true},
    [N_FILES] = {.name = "files",
		 .mode = DIR_MODE,
		 .where = IN_SNAP,
		 .help = "the snapshot's files, read-only",
		 .transient = true,
		 .served = snapview_root_ino},
};

static const struct snap_row *row_of(enum snap_kind k)
{
	static const struct snap_row none = {.name = ""};

	return k < N_MAX ? &rows[k] : &none;
}

const struct fuse_lowlevel_ops snap_ops = {
    .lookup = snapfs_lookup,
    .getattr = snapfs_getattr,
    .setattr = snapfs_setattr,
    .mkdir = snapfs_mkdir,
    .rmdir = snapfs_rmdir,
    .create = snapfs_create,
    .open = snapfs_open,
    .read = snapfs_read,
    .write = snapfs_write,
    .flush = snapfs_flush,
    .release = snapfs_release,
    .opendir = snapfs_opendir,
    .readdir = dirsnap_readdir,
    .readdirplus = dirsnap_readdirplus,
    .releasedir = dirsnap_releasedir,
    .getxattr = snapfs_getxattr,
    .listxattr = snapfs_listxattr,
};
