/* The mount's operation table: each request goes to the part that serves its inode (part_of),
 * whose own struct fuse_lowlevel_ops answers it, as libfuse's examples each have one. An
 * operation a part lacks gets the answer here, never ENOSYS: the kernel would then stop sending
 * that operation for the whole mount, workspace included. */
#include "ops.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctxfs.h"
#include "idle.h"
#include "portfs.h"
#include "root.h"
#include "snapfs.h"
#include "termfs.h"
#include "workspace.h"
#include "xmalloc.h"

/* Each part's operations, and what one it lacks that would change a file answers. */
static const struct part {
	const struct fuse_lowlevel_ops *ops;
	int refuse;
} parts[PART_MAX] = {
    [PART_CONTROL] = {&ctl_ops, EPERM},	   [PART_TERMS] = {&term_ops, EPERM},
    [PART_PORTS] = {&port_ops, EPERM},	   [PART_CONTEXTS] = {&ctx_ops, EPERM},
    [PART_SNAPSHOTS] = {&snap_ops, EPERM}, [PART_SNAPVIEW] = {&view_ops, EROFS},
};

static const struct part workspace = {&ws_ops, EPERM}, root = {&root_ops, EPERM};
/* A tag no part has yet: every request gets the answer for a part without it. */
static const struct fuse_lowlevel_ops no_ops;
static const struct part no_part = {&no_ops, EPERM};

/* Workspace inodes are even; the root is the control part's inode 1, served above the parts. */
static const struct part *part_of(fuse_ino_t ino)
{
	enum part_tag tag = ino_part(ino);

	if (ws_is_ino(ino))
		return &workspace;
	if (ino == FUSE_ROOT_ID)
		return &root;
	return tag < PART_MAX && parts[tag].ops ? &parts[tag] : &no_part;
}

/* Calls op of the part of ino with the request's arguments, or answers otherwise. */
#define FORWARD(ino, op, otherwise, ...)                                                           \
	do {                                                                                       \
		const struct part *p_ = part_of(ino);                                              \
		idle_touch();                                                                      \
		if (p_->ops->op)                                                                   \
			p_->ops->op(req, __VA_ARGS__);                                             \
		else                                                                               \
			otherwise;                                                                 \
	} while (0)

/* What a part that lacks an operation that would change a file answers. */
#define REFUSE(ino) fuse_reply_err(req, part_of(ino)->refuse)
#define REPLY(err)  fuse_reply_err(req, err)

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	ws_ops.init(userdata, conn);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	FORWARD(parent, lookup, REPLY(ENOTDIR), parent, name);
}

/* Only the workspace counts the kernel's lookups. */
static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	FORWARD(ino, forget, fuse_reply_none(req), ino, nlookup);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		if (ws_is_ino(forgets[i].ino))
			ws_name_forget_one(forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	FORWARD(ino, getattr, REPLY(ENOENT), ino, fi);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	FORWARD(ino, setattr, REFUSE(ino), ino, attr, to_set, fi);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	FORWARD(ino, readlink, REPLY(EINVAL), ino);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	FORWARD(parent, mknod, REFUSE(parent), parent, name, mode, rdev);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	FORWARD(parent, mkdir, REFUSE(parent), parent, name, mode);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	FORWARD(parent, unlink, REFUSE(parent), parent, name);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	FORWARD(parent, rmdir, REFUSE(parent), parent, name);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	FORWARD(parent, symlink, REFUSE(parent), link, parent, name);
}

/* Between the workspace and our files, EXDEV: mv then copies, and the copy says why not. */
static int two_inodes(fuse_ino_t a, fuse_ino_t b)
{
	return ws_is_ino(a) != ws_is_ino(b) ? EXDEV : EPERM;
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	if (part_of(parent) != part_of(newparent))
		REPLY(two_inodes(parent, newparent));
	else
		FORWARD(parent, rename, REPLY(EPERM), parent, name, newparent, newname, flags);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	if (part_of(ino) != part_of(newparent))
		REPLY(two_inodes(ino, newparent));
	else
		FORWARD(ino, link, REPLY(EPERM), ino, newparent, newname);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	FORWARD(ino, open, REPLY(EISDIR), ino, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	FORWARD(ino, read, REPLY(EBADF), ino, size, off, fi);
}

/* A part with no write_buf takes the bytes in memory. */
static void write_mem(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
		      struct fuse_file_info *fi)
{
	size_t size = fuse_buf_size(in);
	struct fuse_bufvec mem = FUSE_BUFVEC_INIT(size);
	ssize_t n;

	if (in->count == 1 && !(in->buf[0].flags & FUSE_BUF_IS_FD)) {
		FORWARD(ino, write, REPLY(EBADF), ino, in->buf[0].mem, in->buf[0].size, off, fi);
		return;
	}
	mem.buf[0].mem = xmalloc(size);
	n = fuse_buf_copy(&mem, in, 0);
	if (n < 0)
		REPLY((int)-n);
	else
		FORWARD(ino, write, REPLY(EBADF), ino, mem.buf[0].mem, (size_t)n, off, fi);
	free(mem.buf[0].mem);
}

static void op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
			 struct fuse_file_info *fi)
{
	FORWARD(ino, write_buf, write_mem(req, ino, in, off, fi), ino, in, off, fi);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	FORWARD(ino, flush, REPLY(0), ino, fi);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	FORWARD(ino, release, REPLY(0), ino, fi);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	FORWARD(ino, fsync, REPLY(0), ino, datasync, fi);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	FORWARD(ino, opendir, REPLY(ENOTDIR), ino, fi);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	FORWARD(ino, readdir, REPLY(EBADF), ino, size, off, fi);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	FORWARD(ino, readdirplus, REPLY(EBADF), ino, size, off, fi);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	FORWARD(ino, releasedir, REPLY(0), ino, fi);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	FORWARD(ino, fsyncdir, REPLY(0), ino, datasync, fi);
}

/* The mount's free space is the workspace's. */
static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	ws_ops.statfs(req, ws_is_ino(ino) ? ino : ws_root_ino());
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	FORWARD(ino, setxattr, REPLY(ENOTSUP), ino, name, value, size, flags);
}

/* No file of ours has attributes: ENOSYS makes the kernel stop asking, which saves a round trip
 * per write (it asks for security.capability before each one), unless the workspace is served
 * here too. */
static void no_xattr(fuse_req_t req)
{
	REPLY(ws_through_fuse() ? ENODATA : ENOSYS);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	FORWARD(ino, getxattr, no_xattr(req), ino, name, size);
}

static void no_xattr_list(fuse_req_t req, size_t size)
{
	if (size == 0)
		fuse_reply_xattr(req, 0);
	else
		fuse_reply_buf(req, NULL, 0);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	FORWARD(ino, listxattr, no_xattr_list(req, size), ino, size);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	FORWARD(ino, removexattr, REPLY(ENODATA), ino, name);
}

static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	FORWARD(ino, access, REPLY(0), ino, mask);
}

/* "/" is an O_TMPFILE open (ws_dev_attach_session): no part of ours makes unnamed files. */
static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	if (strcmp(name, "/") == 0 && !ws_is_ino(parent))
		REPLY(EOPNOTSUPP);
	else
		FORWARD(parent, create, REFUSE(parent), parent, name, mode, fi);
}

/* Files that never wait are always ready, as on a local filesystem. */
static void always_ready(fuse_req_t req, struct fuse_pollhandle *ph)
{
	if (ph)
		fuse_pollhandle_destroy(ph);
	fuse_reply_poll(req, POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM);
}

static void op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct fuse_pollhandle *ph)
{
	FORWARD(ino, poll, always_ready(req, ph), ino, fi, ph);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
			 struct fuse_file_info *fi)
{
	FORWARD(ino, fallocate, REPLY(EOPNOTSUPP), ino, mode, offset, length, fi);
}

static void op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			       struct fuse_file_info *fi_out, size_t len, int flags)
{
	if (part_of(ino_in) != part_of(ino_out))
		REPLY(EXDEV);
	else
		FORWARD(ino_in, copy_file_range, REPLY(EXDEV), ino_in, off_in, fi_in, ino_out,
			off_out, fi_out, len, flags);
}

static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	FORWARD(ino, lseek, REPLY(ENXIO), ino, off, whence, fi);
}

static void op_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	FORWARD(ino, flock, REPLY(0), ino, fi, op);
}

const struct fuse_lowlevel_ops sbx_ops = {
    .init = op_init,
    .lookup = op_lookup,
    .forget = op_forget,
    .forget_multi = op_forget_multi,
    .getattr = op_getattr,
    .setattr = op_setattr,
    .readlink = op_readlink,
    .mknod = op_mknod,
    .mkdir = op_mkdir,
    .unlink = op_unlink,
    .rmdir = op_rmdir,
    .symlink = op_symlink,
    .rename = op_rename,
    .link = op_link,
    .open = op_open,
    .read = op_read,
    .write_buf = op_write_buf,
    .flush = op_flush,
    .release = op_release,
    .fsync = op_fsync,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .readdirplus = op_readdirplus,
    .releasedir = op_releasedir,
    .fsyncdir = op_fsyncdir,
    .statfs = op_statfs,
    .setxattr = op_setxattr,
    .getxattr = op_getxattr,
    .listxattr = op_listxattr,
    .removexattr = op_removexattr,
    .access = op_access,
    .create = op_create,
    .poll = op_poll,
    .fallocate = op_fallocate,
    .copy_file_range = op_copy_file_range,
    .lseek = op_lseek,
    .flock = op_flock,
};
