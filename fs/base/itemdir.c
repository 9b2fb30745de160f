/* The directories of a directory of items (itemdir.h). */
#include "itemdir.h"

#include <errno.h>
#include <string.h>

#include "ino.h"
#include "nodeattr.h"

#define FILE_TIMEOUT 3600.0

bool itemdir_is_top(const struct itemdir *t, fuse_ino_t ino)
{
	return ino_kind(ino) == t->top;
}

static bool in_top(const struct itemdir *t, unsigned k)
{
	return t->in_top && t->in_top(k);
}

int itemdir_entry(const struct itemdir *t, fuse_ino_t ino, struct fuse_entry_param *e)
{
	int rc = t->stat(ino, &e->attr, false);

	if (rc < 0)
		return rc;
	e->ino = ino;
	e->entry_timeout = ino_kind(ino) == t->item ? 0 : FILE_TIMEOUT;
	return 0;
}

/* Readdirplus entries count a lookup, with the timeouts a lookup gives. */
void itemdir_plus_fill(const struct itemdir *t, const struct dirsnap_entry *de,
		       struct fuse_entry_param *e)
{
	struct fuse_entry_param filled = {0};

	if (itemdir_entry(t, de->ino, &filled) == 0)
		*e = filled;
}

void itemdir_reply_entry(const struct itemdir *t, fuse_req_t req, fuse_ino_t ino)
{
	struct fuse_entry_param e = {0};
	int rc = itemdir_entry(t, ino, &e);

	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_entry(req, &e);
}

/* The kind of the file name names in a directory (the top when top), or nkinds. */
static unsigned file_named(const struct itemdir *t, const char *name, bool top)
{
	for (unsigned k = 0; k < t->nkinds; k++)
		if (S_ISREG(t->mode(k)) && in_top(t, k) == top && !strcmp(name, t->name(k)))
			return k;
	return t->nkinds;
}

void itemdir_lookup(const struct itemdir *t, fuse_req_t req, fuse_ino_t parent, const char *name)
{
	unsigned k = t->nkinds;
	fuse_ino_t ino = 0;

	if (ino_kind(parent) != t->top && ino_kind(parent) != t->item) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	k = file_named(t, name, ino_kind(parent) == t->top);
	if (k < t->nkinds)
		ino = t->file(parent, k);
	else if (ino_kind(parent) == t->top)
		ino = t->find(parent, name);
	if (ino)
		itemdir_reply_entry(t, req, ino);
	else
		fuse_reply_err(req, ENOENT);
}

void itemdir_getattr(const struct itemdir *t, fuse_req_t req, fuse_ino_t ino)
{
	struct stat st;
	int rc = t->stat(ino, &st, true);

	nodeattr_reply(req, rc, &st);
}

void itemdir_setattr(const struct itemdir *t, fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		     int to_set)
{
	if (!nodeattr_settable(t->mode(ino_kind(ino)), attr, to_set))
		fuse_reply_err(req, EPERM);
	else
		itemdir_getattr(t, req, ino);
}

void itemdir_opendir(const struct itemdir *t, fuse_req_t req, fuse_ino_t ino,
		     struct fuse_file_info *fi)
{
	bool top = ino_kind(ino) == t->top;
	struct dirsnap *d;
	struct stat st;

	if (t->stat(ino, &st, false) < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	d = dirsnap_new(ino, t->parent(ino));
	for (unsigned k = 0; k < t->nkinds; k++)
		if (S_ISREG(t->mode(k)) && in_top(t, k) == top)
			dirsnap_add(d, t->name(k), t->file(ino, k), S_IFREG);
	if (top)
		t->list(d, ino);
	dirsnap_open(req, d, t->plus, fi);
}
