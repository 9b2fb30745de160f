/* The FUSE operation table, and the one place that routes requests to the part that serves the
 * inode: workspace inodes are even (workspace.h), the others odd; among those, snapshots/ and
 * contexts/ have their own (ino.h, snapino.h, ctxino.h), the control tree's number says a kind
 * (ino.h), terms/'s kinds go to fs/terms and ports/'s to fs/ports, and the root's names come
 * from every part (root.c). Files of ours never answer ENOSYS, since the kernel would then stop
 * sending that operation for the whole mount, workspace included. */
#include "ops.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctxfs.h"
#include "dirsnap.h"
#include "portfs.h"
#include "root.h"
#include "snapfs.h"
#include "termfs.h"
#include "workspace.h"
#include "xmalloc.h"

#define WS(ino)	  ws_is_ino(ino)
#define CTX(ino)  ctx_is_ino(ino)
#define SNAP(ino) ino_is_snap(ino)
#define ROOT(ino) ((ino) == FUSE_ROOT_ID)
/* Only once WS and CTX said no: their numbers say no kind of the control tree. */
#define TERM(ino) ino_is_term(ino)
#define PORT(ino) ino_is_xport(ino)

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	ws_init_conn(conn);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (WS(parent))
		ws_ops.lookup(req, parent, name);
	else if (ROOT(parent))
		root_lookup(req, name);
	else if (SNAP(parent))
		snapfs_lookup(req, parent, name);
	else if (CTX(parent))
		ctxfs_lookup(req, parent, name);
	else if (TERM(parent))
		termfs_lookup(req, parent, name);
	else if (PORT(parent))
		portfs_lookup(req, parent, name);
	else
		ctl_lookup(req, parent, name);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	if (WS(ino))
		ws_name_forget_one(ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		if (WS(forgets[i].ino))
			ws_name_forget_one(forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (WS(ino))
		ws_ops.getattr(req, ino, fi);
	else if (ROOT(ino))
		root_getattr(req, fi);
	else if (SNAP(ino))
		snapfs_getattr(req, ino, fi);
	else if (CTX(ino))
		ctxfs_getattr(req, ino, fi);
	else if (TERM(ino))
		termfs_getattr(req, ino, fi);
	else if (PORT(ino))
		portfs_getattr(req, ino, fi);
	else
		ctl_getattr(req, ino, fi);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	if (WS(ino))
		ws_ops.setattr(req, ino, attr, to_set, fi);
	else if (SNAP(ino))
		snapfs_setattr(req, ino, attr, to_set, fi);
	else if (CTX(ino))
		ctxfs_setattr(req, ino, attr, to_set, fi);
	else if (TERM(ino))
		termfs_setattr(req, ino, attr, to_set, fi);
	else if (PORT(ino))
		portfs_setattr(req, ino, attr, to_set, fi);
	else
		ctl_setattr(req, ino, attr, to_set, fi);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	if (WS(ino))
		ws_ops.readlink(req, ino);
	else if (SNAP(ino))
		snapfs_readlink(req, ino);
	else if (CTX(ino) || TERM(ino) || PORT(ino))
		fuse_reply_err(req, EINVAL); /* no links there */
	else
		ctl_readlink(req, ino);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     dev_t rdev)
{
	if (WS(parent))
		ws_ops.mknod(req, parent, name, mode, rdev);
	else
		fuse_reply_err(req, EPERM);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	if (WS(parent))
		ws_ops.mkdir(req, parent, name, mode);
	else if (SNAP(parent))
		snapfs_mkdir(req, parent, name);
	else if (CTX(parent))
		ctxfs_mkdir(req, parent, name);
	else if (TERM(parent))
		termfs_mkdir(req, parent, name);
	else if (PORT(parent))
		portfs_mkdir(req, parent, name);
	else
		ctl_mkdir(req, parent, name);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (WS(parent))
		ws_ops.unlink(req, parent, name);
	else
		fuse_reply_err(req, EPERM);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (WS(parent))
		ws_ops.rmdir(req, parent, name);
	else if (SNAP(parent))
		snapfs_rmdir(req, parent, name);
	else if (CTX(parent))
		ctxfs_rmdir(req, parent, name);
	else if (TERM(parent))
		termfs_rmdir(req, parent, name);
	else if (PORT(parent))
		portfs_rmdir(req, parent, name);
	else
		ctl_rmdir(req, parent, name);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	if (WS(parent))
		ws_ops.symlink(req, link, parent, name);
	else
		fuse_reply_err(req, EPERM);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	if (WS(parent) && WS(newparent))
		ws_ops.rename(req, parent, name, newparent, newname, flags);
	else
		fuse_reply_err(req, WS(parent) != WS(newparent) ? EXDEV : EPERM);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	if (WS(ino) && WS(newparent))
		ws_ops.link(req, ino, newparent, newname);
	else
		fuse_reply_err(req, WS(ino) != WS(newparent) ? EXDEV : EPERM);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (WS(ino))
		ws_ops.open(req, ino, fi);
	else if (SNAP(ino))
		snapfs_open(req, ino, fi);
	else if (CTX(ino))
		ctxfile_open(req, ino, fi);
	else if (TERM(ino))
		termfile_open(req, ino, fi);
	else if (PORT(ino))
		portfile_open(req, ino, fi);
	else
		ctl_open(req, ino, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	if (WS(ino))
		ws_ops.read(req, ino, size, off, fi);
	else if (SNAP(ino))
		snapfs_read(req, ino, size, off, fi);
	else if (CTX(ino))
		ctxfile_read(req, size, off, fi);
	else if (TERM(ino))
		termfile_read(req, size, off, fi);
	else if (PORT(ino))
		portfile_read(req, size, off, fi);
	else
		ctl_read(req, size, off, fi);
}

/* Our files want the bytes in memory. */
static void write_mem(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	if (SNAP(ino))
		snapfs_write(req, ino, buf, size, off, fi);
	else if (CTX(ino))
		ctxfile_write(req, buf, size, fi);
	else if (TERM(ino))
		termfile_write(req, buf, size, fi);
	else if (PORT(ino))
		portfile_write(req, buf, size, fi);
	else
		ctl_write(req, buf, size, fi);
}

/* The workspace takes the buffer as it comes. */
static void op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
			 struct fuse_file_info *fi)
{
	size_t size = fuse_buf_size(in);
	struct fuse_bufvec mem = FUSE_BUFVEC_INIT(size);
	ssize_t n;

	if (WS(ino)) {
		ws_ops.write_buf(req, ino, in, off, fi);
		return;
	}
	if (in->count == 1 && !(in->buf[0].flags & FUSE_BUF_IS_FD)) {
		write_mem(req, ino, in->buf[0].mem, in->buf[0].size, off, fi);
		return;
	}
	mem.buf[0].mem = xmalloc(size);
	n = fuse_buf_copy(&mem, in, 0);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		write_mem(req, ino, mem.buf[0].mem, (size_t)n, off, fi);
	free(mem.buf[0].mem);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (WS(ino))
		ws_ops.flush(req, ino, fi);
	else if (SNAP(ino))
		snapfs_flush(req, ino, fi);
	else if (CTX(ino))
		ctxfile_flush(req, fi);
	else if (TERM(ino))
		termfile_flush(req, fi);
	else if (PORT(ino))
		portfile_flush(req, fi);
	else
		ctl_flush(req, fi);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (WS(ino))
		ws_ops.release(req, ino, fi);
	else if (SNAP(ino))
		snapfs_release(req, ino, fi);
	else if (CTX(ino))
		ctxfile_release(req, fi);
	else if (TERM(ino))
		termfile_release(req, fi);
	else if (PORT(ino))
		portfile_release(req, fi);
	else
		ctl_release(req, fi);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	if (WS(ino))
		ws_ops.fsync(req, ino, datasync, fi);
	else
		fuse_reply_err(req, 0);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (WS(ino))
		ws_ops.opendir(req, ino, fi);
	else if (ROOT(ino))
		root_opendir(req, fi);
	else if (SNAP(ino))
		snapfs_opendir(req, ino, fi);
	else if (CTX(ino))
		ctxfs_opendir(req, ino, fi);
	else if (TERM(ino))
		termfs_opendir(req, ino, fi);
	else if (PORT(ino))
		portfs_opendir(req, ino, fi);
	else
		ctl_opendir(req, ino, fi);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	if (WS(ino))
		ws_ops.readdir(req, ino, size, off, fi);
	else if (ROOT(ino))
		root_readdir(req, size, off, fi, false);
	else if (SNAP(ino))
		snapfs_readdir(req, size, off, fi, false);
	else if (CTX(ino))
		ctxfs_readdir(req, size, off, fi, false);
	else if (TERM(ino))
		termfs_readdir(req, size, off, fi, false);
	else if (PORT(ino))
		portfs_readdir(req, size, off, fi, false);
	else
		ctl_readdir(req, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	if (WS(ino))
		ws_ops.readdirplus(req, ino, size, off, fi);
	else if (ROOT(ino))
		root_readdir(req, size, off, fi, true);
	else if (SNAP(ino))
		snapfs_readdir(req, size, off, fi, true);
	else if (CTX(ino))
		ctxfs_readdir(req, size, off, fi, true);
	else if (TERM(ino))
		termfs_readdir(req, size, off, fi, true);
	else if (PORT(ino))
		portfs_readdir(req, size, off, fi, true);
	else
		ctl_readdir(req, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	/* Every listing but the workspace's is a dirsnap. */
	if (WS(ino))
		ws_ops.releasedir(req, ino, fi);
	else
		dirsnap_release(req, fi);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	if (WS(ino))
		ws_ops.fsyncdir(req, ino, datasync, fi);
	else
		fuse_reply_err(req, 0);
}

/* The mount's free space is the workspace's. */
static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	ws_ops.statfs(req, WS(ino) ? ino : ws_root_ino());
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	if (WS(ino))
		ws_ops.setxattr(req, ino, name, value, size, flags);
	else
		fuse_reply_err(req, SNAP(ino) && snap_ino_kind(ino) == N_NODE ? EROFS : ENOTSUP);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	if (WS(ino))
		ws_ops.getxattr(req, ino, name, size);
	else if (SNAP(ino))
		snapfs_getxattr(req, ino, name, size);
	else if (!ws_through_fuse())
		/* No file here has attributes: ENOSYS makes the kernel stop asking, which saves a
		 * round trip per write (it asks for security.capability before each one). */
		fuse_reply_err(req, ENOSYS);
	else
		fuse_reply_err(req, ENODATA);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	if (WS(ino))
		ws_ops.listxattr(req, ino, size);
	else if (SNAP(ino))
		snapfs_listxattr(req, ino, size);
	else if (size == 0)
		fuse_reply_xattr(req, 0);
	else
		fuse_reply_buf(req, NULL, 0);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	if (WS(ino))
		ws_ops.removexattr(req, ino, name);
	else
		fuse_reply_err(req, ENODATA);
}

static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	if (WS(ino))
		ws_ops.access(req, ino, mask);
	else
		fuse_reply_err(req, 0);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	if (WS(parent))
		ws_ops.create(req, parent, name, mode, fi);
	else if (SNAP(parent) && strcmp(name, "/") != 0)
		snapfs_create(req, parent, name, fi);
	else /* "/" is an O_TMPFILE open (ws_dev_attach_session) */
		fuse_reply_err(req, strcmp(name, "/") == 0 ? EOPNOTSUPP : EPERM);
}

static void op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct fuse_pollhandle *ph)
{
	if (WS(ino) || SNAP(ino)) {
		/* Regular files are always ready, as on a local filesystem, and so are a snapshot's
		 * (an archive's next read never waits). */
		if (ph)
			fuse_pollhandle_destroy(ph);
		fuse_reply_poll(req, POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM);
	} else if (CTX(ino)) {
		ctxfile_poll(req, fi, ph);
	} else if (TERM(ino)) {
		termfile_poll(req, fi, ph);
	} else if (PORT(ino)) {
		portfile_poll(req, fi, ph);
	} else {
		ctl_poll(req, fi, ph);
	}
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
			 struct fuse_file_info *fi)
{
	if (WS(ino))
		ws_ops.fallocate(req, ino, mode, offset, length, fi);
	else
		fuse_reply_err(req, EOPNOTSUPP);
}

static void op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			       struct fuse_file_info *fi_out, size_t len, int flags)
{
	if (WS(ino_in) && WS(ino_out))
		ws_ops.copy_file_range(req, ino_in, off_in, fi_in, ino_out, off_out, fi_out, len,
				       flags);
	else
		fuse_reply_err(req, EXDEV);
}

static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	if (WS(ino))
		ws_ops.lseek(req, ino, off, whence, fi);
	else if (SNAP(ino))
		snapfs_lseek(req, ino, off, whence, fi);
	else
		fuse_reply_err(req, ENXIO);
}

static void op_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	if (WS(ino) && ws_ops.flock)
		ws_ops.flock(req, ino, fi, op);
	else
		fuse_reply_err(req, 0);
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
