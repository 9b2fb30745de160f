/* A session's terms/ (see termfs.h): lookup, attributes, listings built at opendir, mkdir and
 * rmdir of terminals. A terminal's directory and files exist while it does (their number is
 * its id), terms/ while its session does; all of them carry the session's time. */
#include "termfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dirsnap.h"
#include "itemdir.h"
#include "nodeattr.h"
#include "refusals.h"
#include "session.h"
#include "term.h"
#include "termkind.h"

static struct session *session_of(fuse_ino_t ino)
{
	return session_find_serial(ino_serial(ino));
}

static bool exists(struct session *s, fuse_ino_t ino)
{
	struct term *t;

	if (!ino_term(ino)) /* terms/ itself */
		return true;
	t = term_find_id(s, ino_term(ino));
	if (t)
		term_unref(t);
	return t != NULL;
}

/* Fills st for an inode of terms/; -ENOENT if it no longer exists, unless held (a getattr:
 * the kernel holds the inode, maybe open, and fstat on a file of a removed terminal works). */
static int termfs_stat(fuse_ino_t ino, struct stat *st, bool held)
{
	mode_t mode = term_row(ino_kind(ino))->mode;
	struct session *s;

	if (!mode)
		return -ENOENT;
	nodeattr_init(st, ino, mode, NULL);
	s = session_of(ino);
	if ((!s || !exists(s, ino)) && !(held && S_ISREG(mode))) {
		if (s)
			session_unref(s);
		return -ENOENT;
	}
	if (s) {
		st->st_mtim = st->st_ctim = st->st_atim = session_ctime(s);
		if (S_ISREG(mode))
			termfile_stat(ino, s, st);
		session_unref(s);
	}
	nodeattr_blocks(st);
	return 0;
}

static const char *kind_name(unsigned k)
{
	return term_row(k)->name;
}

static mode_t kind_mode(unsigned k)
{
	return term_row(k)->mode;
}

static fuse_ino_t term_dir(fuse_ino_t terms, const struct term *t)
{
	return term_ino(ino_serial(terms), T_DIR, term_id(t));
}

static fuse_ino_t find_term(fuse_ino_t terms, const char *name)
{
	struct session *s = session_of(terms);
	struct term *t = s ? term_find(s, name) : NULL;
	fuse_ino_t ino = t ? term_dir(terms, t) : 0;

	if (t)
		term_unref(t);
	if (s)
		session_unref(s);
	return ino;
}

static void list_terms(struct dirsnap *d, fuse_ino_t ino)
{
	struct session *s = session_of(ino);
	struct term_info *v;
	size_t n;

	if (!s)
		return;
	n = term_list(s, &v);
	for (size_t i = 0; i < n; i++)
		dirsnap_add(d, v[i].name, term_ino(ino_serial(ino), T_DIR, v[i].id), S_IFDIR);
	free(v);
	session_unref(s);
}

static fuse_ino_t file_ino(fuse_ino_t dir, unsigned k)
{
	return term_ino(ino_serial(dir), k, ino_term(dir));
}

static const struct itemdir terms;

static fuse_ino_t parent_of(fuse_ino_t dir)
{
	return itemdir_is_top(&terms, dir) ? session_dir_ino(ino_serial(dir))
					   : terms_dir_ino(ino_serial(dir));
}

static void plus_fill(const struct dirsnap_entry *de, struct fuse_entry_param *e);

static const struct dirsnap_plus term_plus = {plus_fill, NULL};

static const struct itemdir terms = {
    .top = T_TERMS,
    .item = T_DIR,
    .nkinds = T_MAX,
    .name = kind_name,
    .mode = kind_mode,
    .stat = termfs_stat,
    .find = find_term,
    .list = list_terms,
    .file = file_ino,
    .parent = parent_of,
    .plus = &term_plus,
};

static void plus_fill(const struct dirsnap_entry *de, struct fuse_entry_param *e)
{
	itemdir_plus_fill(&terms, de, e);
}

static void termfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	itemdir_lookup(&terms, req, parent, name);
}

static void termfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	itemdir_getattr(&terms, req, ino);
}

static void termfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			   struct fuse_file_info *fi)
{
	(void)fi;
	itemdir_setattr(&terms, req, ino, attr, to_set);
}

static void termfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	itemdir_opendir(&terms, req, ino, fi);
}

static void termfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct session *s;
	struct term *t;
	int rc;

	(void)mode;
	if (!itemdir_is_top(&terms, parent)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	s = session_of(parent);
	rc = s ? term_create(s, name) : -ENOENT;
	t = rc == 0 ? term_find(s, name) : NULL;
	if (t) {
		itemdir_reply_entry(&terms, req, term_dir(parent, t));
		term_unref(t);
	} else {
		/* the bound is the one refusal whose errno does not say which limit */
		if (rc == -ENOSPC)
			refusal_note_in(session_id(s), "terms", name, ENOSPC,
					"the mount has its most terminals, or rows x columns, already "
					"([session] terms_max, term_cells_max)");
		fuse_reply_err(req, rc < 0 ? -rc : ENOENT);
	}
	if (s)
		session_unref(s);
}

/* Answered once the terminal's tree is gone. */
static void termfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct session *s;

	if (!itemdir_is_top(&terms, parent)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	s = session_of(parent);
	fuse_reply_err(req, s ? -term_remove(s, name) : ENOENT);
	if (s)
		session_unref(s);
}

void term_help(struct help *h)
{
	help_add(h, "sessions/ID/", "terms", true, term_row(T_TERMS)->help);
	help_add(h, "sessions/ID/terms/", "NAME", true, term_row(T_DIR)->help);
	for (int k = T_DIR + 1; k < T_MAX; k++)
		help_add(h, "sessions/ID/terms/NAME/", term_row(k)->name, false, term_row(k)->help);
}

const struct fuse_lowlevel_ops term_ops = {
    .lookup = termfs_lookup,
    .getattr = termfs_getattr,
    .setattr = termfs_setattr,
    .mkdir = termfs_mkdir,
    .rmdir = termfs_rmdir,
    .open = termfile_open,
    .read = termfile_read,
    .write = termfile_write,
    .flush = termfile_flush,
    .release = termfile_release,
    .opendir = termfs_opendir,
    .readdir = dirsnap_readdir,
    .readdirplus = dirsnap_readdirplus,
    .releasedir = dirsnap_releasedir,
    .poll = termfile_poll,
};
