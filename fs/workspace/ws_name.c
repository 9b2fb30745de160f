/* The workspace's names: lookup and forget (the kernel's lookup counts), and the entries made,
 * removed, renamed and linked under a directory (mknod, mkdir, symlink, unlink, rmdir, rename,
 * link). Creating runs as the caller (ws_cred.c); the inode table records where each inode was
 * last seen (ws_inode.c). */
#include "ws_priv.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Replies an entry; when the reply does not reach the kernel, its lookup never counted. */
static void reply_entry(fuse_req_t req, const struct fuse_entry_param *e)
{
	if (fuse_reply_entry(req, e) != 0)
		ws_inode_forget(inode_of(e->ino), 1);
}

/* ---- lookup, forget ---- */

void ws_name_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	int pfd = use(parent), res;

	if (pfd < 0) {
		reply_res(req, pfd);
		return;
	}
	res = ws_lookup_in(parent, pfd, name, &e);
	put(parent);
	if (res == -ENOENT && ws_caching()) {
		/* A negative entry: ino 0 lets the kernel cache the absence, which ws_inval.c
		 * drops when the name appears, if it sees the directory. */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = ws_attr_timeout(inode_of(parent));
		fuse_reply_entry(req, &e);
		return;
	}
	if (res)
		reply_res(req, res);
	else
		reply_entry(req, &e);
}

void ws_name_forget_one(fuse_ino_t ino, uint64_t nlookup)
{
	ws_inode_forget(inode_of(ino), nlookup);
}

void ws_name_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	ws_name_forget_one(ino, nlookup);
	fuse_reply_none(req);
}

void ws_name_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		ws_name_forget_one(forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

/* ---- directory entries ---- */

/* Replies the entry of a name just made under parent (fd pfd), or the error res of making
 * it; gives pfd back. */
static void reply_made(fuse_req_t req, fuse_ino_t parent, int pfd, const char *name, int res)
{
	struct fuse_entry_param e;

	if (!res)
		res = ws_lookup_in(parent, pfd, name, &e);
	put(parent);
	if (res)
		reply_res(req, res);
	else
		reply_entry(req, &e);
}

enum make_kind { MAKE_NODE, MAKE_DIR, MAKE_SYMLINK };

static void make(fuse_req_t req, fuse_ino_t parent, const char *name, enum make_kind kind,
		 mode_t mode, dev_t rdev, const char *link)
{
	struct ws_cred c;
	int pfd = use(parent), res;

	if (pfd < 0) {
		reply_res(req, pfd);
		return;
	}
	ws_cred_as_caller(req, &c);
	if (kind == MAKE_NODE)
		res = neg_errno(mknodat(pfd, name, mode, rdev));
	else if (kind == MAKE_DIR)
		res = neg_errno(mkdirat(pfd, name, mode));
	else
		res = neg_errno(symlinkat(link, pfd, name));
	if (!res)
		ws_cred_adopt_new(&c, pfd, name, -1);
	ws_cred_restore(&c);
	reply_made(req, parent, pfd, name, res);
}

void ws_name_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	make(req, parent, name, MAKE_NODE, mode, rdev, NULL);
}

void ws_name_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	make(req, parent, name, MAKE_DIR, mode, 0, NULL);
}

void ws_name_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	make(req, parent, name, MAKE_SYMLINK, 0, 0, link);
}

static void remove_entry(fuse_req_t req, fuse_ino_t parent, const char *name, int flags)
{
	int pfd = use(parent);

	if (pfd < 0) {
		reply_res(req, pfd);
		return;
	}
	reply_res(req, neg_errno(unlinkat(pfd, name, flags)));
	put(parent);
}

void ws_name_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, 0);
}

void ws_name_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, AT_REMOVEDIR);
}

/* The fds of a and b, both in use until put; or -errno, and neither is. */
static int use_both(fuse_ino_t a, int *afd, fuse_ino_t b, int *bfd)
{
	*afd = use(a);
	if (*afd < 0)
		return *afd;
	*bfd = use(b);
	if (*bfd < 0) {
		put(a);
		return *bfd;
	}
	return 0;
}

/* The moved inodes' names are recorded: the budget may have to reopen them by name. */
void ws_name_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		    const char *newname, unsigned int flags)
{
	int pfd, nfd, res = use_both(parent, &pfd, newparent, &nfd);

	if (res) {
		reply_res(req, res);
		return;
	}
	res = neg_errno(renameat2(pfd, name, nfd, newname, flags));
	if (!res) {
		ws_inode_renamed(inode_of(newparent), nfd, newname);
		if (flags & RENAME_EXCHANGE)
			ws_inode_renamed(inode_of(parent), pfd, name);
	}
	put(newparent);
	put(parent);
	reply_res(req, res);
}

/* linkat(AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH (ENOENT without it, and as a caller other
 * than root); the magic link with AT_SYMLINK_FOLLOW reaches the same inode, a symlink or an
 * O_TMPFILE file included, without it. */
static int link_inode(int fd, int newdir, const char *newname)
{
	char p[PROC_FD_LEN];

	if (linkat(fd, "", newdir, newname, AT_EMPTY_PATH) == 0)
		return 0;
	if (errno != ENOENT)
		return -errno;
	return neg_errno(linkat(AT_FDCWD, proc_path(p, fd), newdir, newname, AT_SYMLINK_FOLLOW));
}

void ws_name_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct fuse_entry_param e;
	struct ws_cred c;
	int fd, nfd, res = use_both(ino, &fd, newparent, &nfd);

	if (res) {
		reply_res(req, res);
		return;
	}
	ws_cred_as_caller(req, &c);
	res = link_inode(fd, nfd, newname);
	ws_cred_restore(&c);
	memset(&e, 0, sizeof(e));
	if (!res)
		res = ws_stat_fd(fd, &e.attr);
	if (!res)
		ws_inode_renamed(inode_of(newparent), nfd, newname);
	put(newparent);
	put(ino);
	if (res) {
		reply_res(req, res);
		return;
	}
	e.ino = ino;
	e.attr_timeout = e.entry_timeout = ws_attr_timeout(inode_of(ino));
	ws_inode_ref_again(inode_of(ino));
	reply_entry(req, &e);
}
