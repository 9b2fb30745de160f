/* The workspace's open regular files: open and create (O_TMPFILE too), their reads, writes,
 * syncs, allocation, copies, seeks and flock, and release. Each open file has its own fd of the
 * backing file and keeps its inode's fd in use; with passthrough it shares the inode's backing
 * file (ws_dev.c), and the kernel does its I/O on that file itself. */
#include "ws_priv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "xmalloc.h"

/* A passthrough write would not clear suid/sgid (the kernel leaves it to us with killpriv v2,
 * and the backing write runs with the daemon's CAP_FSETID), so such files are written through
 * the daemon, which sees FUSE_WRITE_KILL_SUIDGID. */
static bool writes_need_kill(int fd, int flags)
{
	struct stat st;

	return (flags & O_ACCMODE) != O_RDONLY && fstat(fd, &st) == 0 &&
	       ws_attr_sxid_to_kill(st.st_mode);
}

/* Closes an open file: its fd (dropping a flock() taken through it), its share of the backing
 * file, and the use of its inode's fd. */
static void file_free(struct ws_file *f, struct ws_inode *in)
{
	if (f->pt)
		ws_dev_backing_put(f->pt);
	close(f->fd);
	ws_budget_fd_closed();
	ws_budget_unuse(in);
	free(f);
}

/* Replies an open or create of the backing fd (taken, counted, as is a use of in's fd) with
 * the kernel's caching mode: passthrough (reads, writes and mmap go to the backing file in the
 * kernel, no FUSE page cache) when the connection has it, else the FUSE page cache (kept with
 * ws_opts.cache). Some opens need their reads and writes to come to the daemon instead (direct
 * I/O): O_DIRECT ones, whose unaligned buffers the backing file would refuse, writers of
 * suid/sgid files (killpriv), and writers sharing a read-only backing file; with passthrough
 * they are passthrough and direct I/O at once (the kernel then only maps through the backing
 * file). Returns what fuse_reply_open/create returned. */
static int reply_opened(fuse_req_t req, struct ws_inode *in, struct fuse_file_info *fi, int fd,
			const struct fuse_entry_param *e)
{
	struct ws_file *f = xcalloc(1, sizeof(*f));
	bool write = (fi->flags & O_ACCMODE) != O_RDONLY, rw = false;
	int rc, id;

	f->fd = fd;
	fi->fh = (uint64_t)(uintptr_t)f;
	/* Writes are write-through, so close has nothing to flush: skip the FLUSH round trip.
	 * (POSIX locks are the kernel's, released by the kernel at close.) */
	fi->noflush = 1;
	fi->direct_io = (fi->flags & O_DIRECT) != 0;
	if (ws_dev_pt_wanted()) {
		/* An inode that has a backing file keeps it even if the kernel stopped taking
		 * new ones: all its opens must name it. */
		id = ws_dev_backing_get(in, fi->flags, &rw);
		if (id > 0) {
			f->pt = in;
			ws_dev_reply_backing(id);
			if ((write && !rw) || writes_need_kill(fd, fi->flags))
				fi->direct_io = 1;
		} else if (ws_dev_pt_active()) {
			/* This file could not be registered (ELOOP, EMFILE...). Direct I/O takes no
			 * inode I/O mode, so it fits later passthrough opens of the inode. */
			fi->direct_io = 1;
		}
	}
	if (!fi->direct_io && !f->pt) {
		/* Without caching, pages are dropped at each open (close-to-open consistency); with
		 * it, the kernel drops them itself when a revalidation finds another mtime or size,
		 * or ws_inval.c when the sandbox writes the file. */
		fi->keep_cache = ws_cacheable(in);
	}
	rc = e ? fuse_reply_create(req, e, fi) : fuse_reply_open(req, fi);
	ws_dev_reply_backing(0);
	if (rc != 0)
		file_free(f, in);
	return rc;
}

void ws_file_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char p[PROC_FD_LEN];
	int ifd = use(ino), fd;

	if (ifd < 0) {
		reply_res(req, ifd);
		return;
	}
	ws_budget_fd_opening();
	fd = open(proc_path(p, ifd), ws_reopen_flags(fi->flags));
	if (fd == -1) {
		int err = errno;

		ws_budget_fd_closed();
		put(ino);
		ws_warn_nofile(err);
		fuse_reply_err(req, err);
		return;
	}
	ws_attr_kill_suidgid(fd); /* O_TRUNC */
	reply_opened(req, inode_of(ino), fi, fd, NULL);
}

/* The name the create handler gets for an O_TMPFILE open (see ws_dev.c): the kernel names the
 * unnamed file "/", which no real name can be. */
static bool is_tmpfile_name(const char *name)
{
	return name[0] == '/' && name[1] == '\0';
}

/* An unnamed file in parent (fd pfd): its inode fd is an O_PATH reopen of the open file. */
static int create_tmpfile(fuse_ino_t parent, int pfd, int flags, mode_t mode, int *fdp,
			  struct fuse_entry_param *e)
{
	char p[PROC_FD_LEN];
	int fd, ifd, res;

	memset(e, 0, sizeof(*e));
	fd = openat(pfd, ".", (flags & ~(O_CREAT | O_EXCL | O_DIRECT)) | O_CLOEXEC, mode);
	if (fd == -1)
		return -errno;
	ifd = open(proc_path(p, fd), O_PATH | O_CLOEXEC);
	if (ifd == -1 || (res = ws_stat_fd(ifd, &e->attr)) != 0) {
		res = -errno;
		if (ifd != -1)
			close(ifd);
		close(fd);
		return res;
	}
	e->ino = ws_inode_ref_fd(inode_of(parent), ifd, &e->attr);
	e->attr_timeout = e->entry_timeout = ws_attr_timeout(inode_of(e->ino));
	*fdp = fd;
	return 0;
}

/* O_NOFOLLOW: the kernel resolved the name as absent, so if it is a symlink now (made in the
 * backing dir meanwhile) refuse it rather than create wherever it points. */
void ws_file_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		    struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	struct ws_cred c;
	int fd = -1,
	    flags = (fi->flags & ~(O_DIRECT | O_NOCTTY)) | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
	int pfd = use(parent), ifd;
	bool existed;
	int res;

	if (pfd < 0) {
		reply_res(req, pfd);
		return;
	}
	ws_budget_fd_opening();
	ws_cred_as_caller(req, &c);
	if (is_tmpfile_name(name)) {
		res = create_tmpfile(parent, pfd, fi->flags, mode, &fd, &e);
		existed = false;
	} else {
		existed = c.adopt && faccessat(pfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
		fd = openat(pfd, name, flags, mode);
		res = fd == -1 ? -errno : 0;
	}
	if (!res && !existed) {
		ws_cred_adopt_new(&c, pfd, name, fd);
		if (c.adopt && is_tmpfile_name(name))
			ws_stat_fd(fd, &e.attr); /* the owner it was given */
	}
	ws_cred_restore(&c);
	if (!res)
		ws_attr_kill_suidgid(fd); /* an existing file truncated */
	if (!res && !is_tmpfile_name(name))
		res = ws_lookup_in(parent, pfd, name, &e);
	put(parent);
	ifd = res ? res : use(e.ino);
	if (ifd < 0) {
		ws_warn_nofile(-ifd);
		if (!res)
			ws_inode_forget(inode_of(e.ino), 1);
		if (fd != -1)
			close(fd);
		ws_budget_fd_closed();
		reply_res(req, ifd);
		return;
	}
	if (reply_opened(req, inode_of(e.ino), fi, fd, &e) != 0)
		ws_inode_forget(inode_of(e.ino), 1);
}

void ws_file_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);

	(void)ino;
	buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	buf.buf[0].fd = file_fd(fi);
	buf.buf[0].pos = off;
	fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE); /* replies the error itself */
}

void ws_file_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
		       struct fuse_file_info *fi)
{
	struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in));
	ssize_t n;

	(void)ino;
	ws_attr_kill_suidgid(file_fd(fi));
	if (in->count == 1 && !(in->buf[0].flags & FUSE_BUF_IS_FD)) {
		n = pwrite(file_fd(fi), in->buf[0].mem, in->buf[0].size, off);
		if (n == -1)
			fuse_reply_err(req, errno);
		else
			fuse_reply_write(req, (size_t)n);
		return;
	}
	out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	out.buf[0].fd = file_fd(fi);
	out.buf[0].pos = off;
	n = fuse_buf_copy(&out, in, FUSE_BUF_SPLICE_MOVE);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

/* Only used if the dispatcher has no write_buf; same as above from memory. */
void ws_file_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	ssize_t n;

	(void)ino;
	ws_attr_kill_suidgid(file_fd(fi));
	n = pwrite(file_fd(fi), buf, size, off);
	if (n == -1)
		fuse_reply_err(req, errno);
	else
		fuse_reply_write(req, (size_t)n);
}

/* Not sent while opens say noflush; kept for a kernel that sends it anyway. Closing a
 * duplicate reports deferred write errors (NFS etc.) without closing fh. */
void ws_file_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int dup = fcntl(file_fd(fi), F_DUPFD_CLOEXEC, 0);

	(void)ino;
	if (dup == -1)
		fuse_reply_err(req, errno);
	else
		reply_res(req, neg_errno(close(dup)));
}

void ws_file_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	file_free(file_of(fi), inode_of(ino));
	fuse_reply_err(req, 0);
}

int ws_file_sync_fd(int fd, int datasync)
{
	return neg_errno(datasync ? fdatasync(fd) : fsync(fd));
}

void ws_file_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	reply_res(req, ws_file_sync_fd(file_fd(fi), datasync));
}

/* Every mode goes to the backing filesystem; the kernel itself refuses the modes FUSE has no
 * page cache handling for (collapse and insert range) before they get here. */
void ws_file_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
		       struct fuse_file_info *fi)
{
	(void)ino;
	reply_res(req, neg_errno(fallocate(file_fd(fi), mode, offset, length)));
}

void ws_file_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			     struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			     struct fuse_file_info *fi_out, size_t len, int flags)
{
	ssize_t n;

	(void)ino_in;
	(void)ino_out;
	n = copy_file_range(file_fd(fi_in), &off_in, file_fd(fi_out), &off_out, len,
			    (unsigned int)flags);
	if (n == -1)
		fuse_reply_err(req, errno);
	else
		fuse_reply_write(req, (size_t)n);
}

void ws_file_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi)
{
	off_t res = lseek(file_fd(fi), off, whence);

	(void)ino;
	if (res == -1)
		fuse_reply_err(req, errno);
	else
		fuse_reply_lseek(req, res);
}

/* flock() on fh, which is one open file description per open of the mount, as flock wants,
 * and which a sandbox process's flock() on the backing file sees. A blocking request polls with
 * LOCK_NB (what a blocking flock does to an upgraded lock meanwhile is the same: the old lock
 * is gone while it waits) so that an interrupt (Ctrl-C) can end it with EINTR. */
void ws_file_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	struct timespec delay = {0, 250 * 1000};
	int fd = file_fd(fi);

	(void)ino;
	if ((op & LOCK_NB) || (op & LOCK_UN)) {
		reply_res(req, neg_errno(flock(fd, op)));
		return;
	}
	for (;;) {
		if (flock(fd, op | LOCK_NB) == 0) {
			fuse_reply_err(req, 0);
			return;
		}
		if (errno != EWOULDBLOCK && errno != EINTR) {
			fuse_reply_err(req, errno);
			return;
		}
		if (fuse_req_interrupted(req)) {
			fuse_reply_err(req, EINTR);
			return;
		}
		nanosleep(&delay, NULL);
		if (delay.tv_nsec < 16 * 1000 * 1000)
			delay.tv_nsec *= 2;
	}
}
