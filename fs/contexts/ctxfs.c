/* contexts/ (see ctxfs.h): lookup, attributes (from its kinds' rows, ctxkind.h), listings
 * built at opendir, mkdir and rmdir of contexts. */
#include "ctxfs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cell.h"
#include "context.h"
#include "ctxkind.h"
#include "dirsnap.h"
#include "nodeattr.h"
#include "refusals.h"
#include "run.h"
#include "xmalloc.h"

/* Fixed names: let the kernel keep them. */
#define FIXED_TIMEOUT 3600.0

fuse_ino_t ctxfs_root_ino(void)
{
	return ctx_ino(0, X_DIR, 0, 0, 0);
}

/* A cell's files are history: read-only. */
static mode_t mode_of(fuse_ino_t ino)
{
	enum ctx_kind k = ctx_ino_kind(ino);

	return ctx_ino_cell(ino) ? ctx_row(k)->mode & ~(mode_t)0222 : ctx_row(k)->mode;
}

int ctxfs_resolve(fuse_ino_t ino, struct context **c, struct cell **cell)
{
	unsigned flags = ctx_row(ctx_ino_kind(ino))->flags;

	*c = NULL;
	*cell = NULL;
	if (flags & XF_TOP)
		return 0;
	*c = context_find_serial(ctx_ino_serial(ino));
	if (!*c)
		return -ENOENT;
	if (!(flags & XF_CELL))
		return 0;
	*cell = context_cell(*c, ctx_ino_cell(ino));
	if (*cell || !ctx_ino_cell(ino))
		return 0;
	context_unref(*c);
	*c = NULL;
	return -ENOENT;
}

static void release_pair(struct context *c, struct cell *cell)
{
	if (cell)
		cell_unref(cell);
	if (c)
		context_unref(c);
}

/* Size of the file now, as its row says. */
static void size_now(fuse_ino_t ino, struct context *c, struct cell *cell, struct stat *st)
{
	const struct xkind *k = ctx_row(ctx_ino_kind(ino));
	char *text = NULL;
	size_t len = 0;

	if (k->size)
		k->size(cell, ino, st);
	else if (k->render && k->render(c, cell, ino, &text, &len) == 0 && text)
		st->st_size = (off_t)len;
	free(text);
}

int ctxfs_stat(fuse_ino_t ino, struct stat *st, struct fuse_file_info *fi, bool held)
{
	enum ctx_kind k = ctx_ino_kind(ino);
	struct context *c;
	struct cell *cell;
	int rc;

	if (k >= X_MAX)
		return -ENOENT;
	nodeattr_init(st, ino, mode_of(ino), NULL);
	rc = ctxfs_resolve(ino, &c, &cell);
	if (rc == 0 && ctx_row(k)->present && !ctx_row(k)->present(cell, ino))
		rc = -ENOENT;
	if (rc < 0) {
		release_pair(c, cell);
		/* An open file outlives its context: fstat on it still works. */
		return (fi && fi->fh) || (held && S_ISREG(st->st_mode)) ? 0 : rc;
	}
	if (c)
		st->st_mtim = st->st_ctim = st->st_atim = context_ctime(c);
	if (fi && fi->fh && S_ISREG(st->st_mode) && ctxfile_stat(fi, st) == 0)
		;
	else if (c && S_ISREG(st->st_mode))
		size_now(ino, c, cell, st);
	release_pair(c, cell);
	nodeattr_blocks(st);
	return 0;
}

/* A name that comes and goes is kept 0 s: one removed and made again is a new one. */
static int entry_of(fuse_ino_t ino, struct fuse_entry_param *e)
{
	int rc = ctxfs_stat(ino, &e->attr, NULL, false);

	if (rc < 0)
		return rc;
	e->ino = ino;
	e->entry_timeout = ctx_row(ctx_ino_kind(ino))->flags & XF_TRANSIENT ? 0 : FIXED_TIMEOUT;
	return 0;
}

static void reply_entry(fuse_req_t req, fuse_ino_t ino)
{
	struct fuse_entry_param e = {0};
	int rc = entry_of(ino, &e);

	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_entry(req, &e);
}

int ctxfs_root_entry(struct fuse_entry_param *e)
{
	return entry_of(ctxfs_root_ino(), e);
}

/* "K.EXT" of a displayed value: 0 and its index and format, or -ENOENT. */
static int parse_resname(const char *name, unsigned *k, unsigned *f)
{
	char *end;
	unsigned long v = strtoul(name, &end, 10);

	if (end == name || *end != '.' || v > CTX_RES_MAX || (name[0] == '0' && end - name > 1))
		return -ENOENT;
	for (unsigned i = 0; i < CTX_FORMATS; i++)
		if (!strcmp(end + 1, ctx_format_ext(i))) {
			*k = (unsigned)v;
			*f = i;
			return 0;
		}
	return -ENOENT;
}

static void lookup_in(fuse_req_t req, fuse_ino_t parent, const char *name, int where)
{
	uint32_t serial = ctx_ino_serial(parent);
	unsigned n = ctx_ino_cell(parent);

	for (int k = 0; k < X_MAX; k++)
		if ((ctx_row(k)->where & where) && !strcmp(name, ctx_row(k)->name)) {
			reply_entry(req, ctx_ino(serial, k, n, 0, 0));
			return;
		}
	fuse_reply_err(req, ENOENT);
}

static void lookup_contexts(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct context *c;

	(void)parent;
	if (!strcmp(name, "clone")) {
		reply_entry(req, ctx_ino(0, X_CLONE, 0, 0, 0));
		return;
	}
	c = context_find(name);
	if (!c) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	reply_entry(req, ctx_ino(context_serial(c), X_CTX, 0, 0, 0));
	context_unref(c);
}

static void lookup_cells(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	char *end;
	unsigned long v = strtoul(name, &end, 10);

	if (*end || end == name || name[0] == '0' || v > CTX_CELL_MAX)
		fuse_reply_err(req, ENOENT);
	else
		reply_entry(req, ctx_ino(ctx_ino_serial(parent), X_CELLDIR, (unsigned)v, 0, 0));
}

static void lookup_results(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	unsigned k, f;

	if (parse_resname(name, &k, &f) < 0)
		fuse_reply_err(req, ENOENT);
	else
		reply_entry(req,
			    ctx_ino(ctx_ino_serial(parent), X_RESFILE, ctx_ino_cell(parent), k, f));
}

static void ctxfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	const struct xkind *r = ctx_row(ctx_ino_kind(parent));

	if (r->holds)
		lookup_in(req, parent, name, r->holds);
	else if (r->lookup)
		r->lookup(req, parent, name);
	else
		fuse_reply_err(req, ENOTDIR);
}

static void ctxfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	int rc = ctxfs_stat(ino, &st, fi, true);

	nodeattr_reply(req, rc, &st);
}

static void ctxfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			  struct fuse_file_info *fi)
{
	mode_t mode = ctx_ino_kind(ino) < X_MAX ? mode_of(ino) : 0;

	/* `echo x > code` truncates: a no-op on the files one writes to. */
	if (!nodeattr_settable(mode, attr, to_set)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	ctxfs_getattr(req, ino, fi);
}

static void mkdir_context(fuse_req_t req, const char *name)
{
	struct context *c;
	int rc;

	if (!strcmp(name, "clone")) {
		fuse_reply_err(req, EEXIST);
		return;
	}
	if ((rc = context_create(name)) < 0) {
		if (rc == -EINVAL) {
			char *path = xasprintf("contexts/%s", name);

			refusal_note(
			    path, EINVAL,
			    "a context's name is 1 to 64 of A-Z a-z 0-9 . _ -, not . or ..");
			free(path);
		}
		fuse_reply_err(req, -rc);
		return;
	}
	c = context_find(name);
	if (!c) { /* removed at once by another request */
		fuse_reply_err(req, ENOENT);
		return;
	}
	reply_entry(req, ctx_ino(context_serial(c), X_CTX, 0, 0, 0));
	context_unref(c);
}

static void rmdir_context(fuse_req_t req, const char *name)
{
	fuse_reply_err(req, -context_remove(name));
}

static void ctxfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	const struct xkind *r = ctx_row(ctx_ino_kind(parent));

	(void)mode;
	if (r->mkdir)
		r->mkdir(req, name);
	else
		fuse_reply_err(req, EPERM);
}

static void ctxfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	const struct xkind *r = ctx_row(ctx_ino_kind(parent));

	if (r->rmdir)
		r->rmdir(req, name);
	else
		fuse_reply_err(req, EPERM);
}

static void list_contexts(struct dirsnap *d, fuse_ino_t ino, struct context *c, struct cell *cell)
{
	struct context_info *v;
	size_t n = context_list(&v);

	(void)ino;
	(void)c;
	(void)cell;
	dirsnap_add(d, "clone", ctx_ino(0, X_CLONE, 0, 0, 0), S_IFREG);
	for (size_t i = 0; i < n; i++)
		dirsnap_add(d, v[i].name, ctx_ino(v[i].serial, X_CTX, 0, 0, 0), S_IFDIR);
	free(v);
}

static void list_cells(struct dirsnap *d, fuse_ino_t ino, struct context *c, struct cell *cell)
{
	unsigned *ns;
	size_t n = context_cells(c, &ns);
	char name[16];

	(void)cell;
	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%u", ns[i]);
		dirsnap_add(d, name, ctx_ino(ctx_ino_serial(ino), X_CELLDIR, ns[i], 0, 0), S_IFDIR);
	}
	free(ns);
}

static void list_results(struct dirsnap *d, fuse_ino_t ino, struct context *c, struct cell *cell)
{
	size_t n = cell ? cell_result_count(cell) : 0;
	char name[32];

	(void)c;
	for (size_t k = 0; k < n && k <= CTX_RES_MAX; k++)
		for (unsigned f = 0; f < CTX_FORMATS; f++) {
			if (!cell_result_has(cell, (unsigned)k, f))
				continue;
			snprintf(name, sizeof(name), "%zu.%s", k, ctx_format_ext(f));
			dirsnap_add(d, name,
				    ctx_ino(ctx_ino_serial(ino), X_RESFILE, ctx_ino_cell(ino),
					    (unsigned)k, f),
				    S_IFREG);
		}
}

static void list_in(struct dirsnap *d, fuse_ino_t ino, int where)
{
	for (int x = 0; x < X_MAX; x++)
		if (ctx_row(x)->where & where)
			dirsnap_add(d, ctx_row(x)->name,
				    ctx_ino(ctx_ino_serial(ino), x, ctx_ino_cell(ino), 0, 0),
				    ctx_row(x)->mode & S_IFMT);
}

static fuse_ino_t top_parent(fuse_ino_t ino)
{
	(void)ino;
	return FUSE_ROOT_ID;
}

static fuse_ino_t ctx_parent(fuse_ino_t ino)
{
	(void)ino;
	return ctxfs_root_ino();
}

static fuse_ino_t cells_parent(fuse_ino_t ino)
{
	return ctx_ino(ctx_ino_serial(ino), X_CTX, 0, 0, 0);
}

static fuse_ino_t celldir_parent(fuse_ino_t ino)
{
	return ctx_ino(ctx_ino_serial(ino), X_CELLS, 0, 0, 0);
}

/* The latest cell's results/ is in the context's directory, cell N's in cells/N/. */
static fuse_ino_t results_parent(fuse_ino_t ino)
{
	unsigned n = ctx_ino_cell(ino);

	return ctx_ino(ctx_ino_serial(ino), n ? X_CELLDIR : X_CTX, n, 0, 0);
}

/* Readdirplus entries count a lookup, with no timeouts. */
static void plus_fill(const struct dirsnap_entry *de, struct fuse_entry_param *e)
{
	struct stat st;

	if (ctxfs_stat(de->ino, &st, NULL, false) < 0)
		return;
	e->attr = st;
	e->ino = de->ino;
}

static const struct dirsnap_plus ctx_plus = {plus_fill, NULL};

static void ctxfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	const struct xkind *r = ctx_row(ctx_ino_kind(ino));
	struct context *c;
	struct cell *cell;
	struct dirsnap *d;
	struct stat st;

	if (ctxfs_stat(ino, &st, NULL, false) < 0 || ctxfs_resolve(ino, &c, &cell) < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		release_pair(c, cell);
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	d = dirsnap_new(ino, r->parent(ino));
	if (r->holds)
		list_in(d, ino, r->holds);
	else
		r->list(d, ino, c, cell);
	release_pair(c, cell);
	dirsnap_open(req, d, &ctx_plus, fi);
}

/* The directories' rows (ctxkinds.c has the files'). */

const struct xkind ctx_top_row = {
    .name = "contexts",
    .path = "contexts/",
    .help = "code interpreters, one directory each",
    .mode = S_IFDIR | 0755,
    .flags = XF_TOP,
    .lookup = lookup_contexts,
    .list = list_contexts,
    .parent = top_parent,
    .mkdir = mkdir_context,
    .rmdir = rmdir_context,
};

const struct xkind ctx_dir_row = {
    .name = "",
    .path = "contexts/NAME/",
    .help = "an interpreter: mkdir makes it, rmdir ends it; cells go to code",
    .mode = S_IFDIR | 0755,
    .flags = XF_TRANSIENT,
    .holds = IN_CTX,
    .parent = ctx_parent,
};

const struct xkind ctx_cells_row = {
    .name = "cells",
    .help = "the last cells, one directory each",
    .mode = S_IFDIR | 0755,
    .where = IN_CTX,
    .lookup = lookup_cells,
    .list = list_cells,
    .parent = cells_parent,
};

const struct xkind ctx_celldir_row = {
    .name = "",
    .path = "contexts/NAME/cells/N/",
    .help = "cell N's files, read-only",
    .mode = S_IFDIR | 0755,
    .flags = XF_CELL | XF_TRANSIENT,
    .holds = IN_CELL,
    .parent = celldir_parent,
};

const struct xkind ctx_results_row = {
    .name = "results",
    .help = "the cell's displayed values, a file per format",
    .mode = S_IFDIR | 0755,
    .where = IN_CTX | IN_CELL,
    .flags = XF_CELL | XF_TRANSIENT,
    .lookup = lookup_results,
    .list = list_results,
    .parent = results_parent,
};

/* A row with paths has its own lines; the others one in each directory that holds them. */
void ctx_help(struct help *h)
{
	for (int k = 0; k < X_MAX; k++) {
		const struct xkind *r = ctx_row(k);
		char *paths = r->path ? xstrdup(r->path) : NULL, *save;

		for (char *p = paths ? strtok_r(paths, " ", &save) : NULL; p;
		     p = strtok_r(NULL, " ", &save))
			help_add(h, p, "", false, r->help);
		free(paths);
		if (!r->path && (r->where & IN_CTX))
			help_add(h, "contexts/NAME/", r->name, S_ISDIR(r->mode), r->help);
		if (!r->path && (r->where & IN_CELL))
			help_add(h, "contexts/NAME/cells/N/", r->name, S_ISDIR(r->mode), r->help);
	}
}

const struct fuse_lowlevel_ops ctx_ops = {
    .lookup = ctxfs_lookup,
    .getattr = ctxfs_getattr,
    .setattr = ctxfs_setattr,
    .mkdir = ctxfs_mkdir,
    .rmdir = ctxfs_rmdir,
    .open = ctxfile_open,
    .read = ctxfile_read,
    .write = ctxfile_write,
    .flush = ctxfile_flush,
    .release = ctxfile_release,
    .opendir = ctxfs_opendir,
    .readdir = dirsnap_readdir,
    .readdirplus = dirsnap_readdirplus,
    .releasedir = dirsnap_releasedir,
    .poll = ctxfile_poll,
};
