/* A session's terms/ (see termfs.h): lookup, attributes, listings built at opendir, mkdir and
 * rmdir of terminals. A terminal's directory and files exist while it does (their number is
 * its id), terms/ while its session does; all of them carry the session's time. */
#include "termfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dirsnap.h"
#include "nodeattr.h"
#include "session.h"
#include "term.h"
#include "termkind.h"

/* A terminal's files never change names: the kernel may keep them. A terminal goes on its own
 * (rmdir in another process, its session's end), and a name made again is a new terminal:
 * its directory's name is kept 0. */
#define FILE_TIMEOUT 3600.0

static struct session *session_of(fuse_ino_t ino)
{
	return session_find_serial(ino_serial(ino));
}

static mode_t mode_of(fuse_ino_t ino)
{
	return term_row(ino_kind(ino))->mode;
}

static bool exists(struct session *s, fuse_ino_t ino)
{
	struct term *t;

	if (ino_kind(ino) == K_TERMS)
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
	mode_t mode = mode_of(ino);
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

static int entry_of(fuse_ino_t ino, struct fuse_entry_param *e)
{
	int rc = termfs_stat(ino, &e->attr, false);

	if (rc < 0)
		return rc;
	e->ino = ino;
	e->entry_timeout = ino_kind(ino) == K_TERMDIR ? 0 : FILE_TIMEOUT;
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

static fuse_ino_t term_dir(fuse_ino_t terms, const struct term *t)
{
	return job_ino(ino_serial(terms), K_TERMDIR, term_id(t));
}

static void lookup_term(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct session *s = session_of(parent);
	struct term *t = s ? term_find(s, name) : NULL;

	if (t) {
		reply_entry(req, term_dir(parent, t));
		term_unref(t);
	} else {
		fuse_reply_err(req, ENOENT);
	}
	if (s)
		session_unref(s);
}

static void lookup_file(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	for (int k = 0; k < K_MAX; k++)
		if (S_ISREG(term_row(k)->mode) && strcmp(name, term_row(k)->name) == 0) {
			reply_entry(req, job_ino(ino_serial(parent), k, ino_term(parent)));
			return;
		}
	fuse_reply_err(req, ENOENT);
}

void termfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (ino_kind(parent) == K_TERMS)
		lookup_term(req, parent, name);
	else if (ino_kind(parent) == K_TERMDIR)
		lookup_file(req, parent, name);
	else
		fuse_reply_err(req, ENOTDIR);
}

void termfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	int rc = termfs_stat(ino, &st, true);

	(void)fi;
	nodeattr_reply(req, rc, &st);
}

void termfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		    struct fuse_file_info *fi)
{
	if (!nodeattr_settable(mode_of(ino), attr, to_set)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	termfs_getattr(req, ino, fi);
}

void termfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct session *s;
	struct term *t;
	int rc;

	if (ino_kind(parent) != K_TERMS) {
		fuse_reply_err(req, EPERM);
		return;
	}
	s = session_of(parent);
	rc = s ? term_create(s, name) : -ENOENT;
	t = rc == 0 ? term_find(s, name) : NULL;
	if (t) {
		reply_entry(req, term_dir(parent, t));
		term_unref(t);
	} else {
		fuse_reply_err(req, rc < 0 ? -rc : ENOENT);
	}
	if (s)
		session_unref(s);
}

/* Answered once the terminal's tree is gone. */
void termfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct session *s;

	if (ino_kind(parent) != K_TERMS) {
		fuse_reply_err(req, EPERM);
		return;
	}
	s = session_of(parent);
	fuse_reply_err(req, s ? -term_remove(s, name) : ENOENT);
	if (s)
		session_unref(s);
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
		dirsnap_add(d, v[i].name, job_ino(ino_serial(ino), K_TERMDIR, v[i].id), S_IFDIR);
	free(v);
	session_unref(s);
}

static void list_files(struct dirsnap *d, fuse_ino_t ino)
{
	for (int k = 0; k < K_MAX; k++)
		if (S_ISREG(term_row(k)->mode))
			dirsnap_add(d, term_row(k)->name,
				    job_ino(ino_serial(ino), k, ino_term(ino)), S_IFREG);
}

void termfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dirsnap *d;
	struct stat st;

	if (termfs_stat(ino, &st, false) < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (ino_kind(ino) == K_TERMS) {
		d = dirsnap_new(ino, ctl_ino(ino_serial(ino), K_SDIR, 0));
		list_terms(d, ino);
	} else {
		d = dirsnap_new(ino, ctl_ino(ino_serial(ino), K_TERMS, 0));
		list_files(d, ino);
	}
	dirsnap_open(req, d, fi);
}

/* Readdirplus entries count a lookup, with the timeouts a lookup gives. */
static void plus_fill(const struct dirsnap_entry *de, struct fuse_entry_param *e)
{
	struct fuse_entry_param filled = {0};

	if (entry_of(de->ino, &filled) == 0)
		*e = filled;
}

void termfs_readdir(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi, bool plus)
{
	static const struct dirsnap_plus term_plus = {plus_fill, NULL};

	dirsnap_read(req, fi, size, off, plus ? &term_plus : NULL);
}
