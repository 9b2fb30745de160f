/* The workspace's attributes: getattr and setattr (with the suid/sgid clearing a write or
 * truncate owes, which open files use too), readlink, statfs, extended attributes and access.
 * All go through the inode's O_PATH fd or its magic link, never a path. */
#include "ws_priv.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "idmap.h"
#include "ws_view.h"
#include "xmalloc.h"

/* ---- attributes ---- */

static void reply_attr(fuse_req_t req, fuse_ino_t ino, int fd)
{
	struct stat st;
	int res = ws_stat_fd(fd, &st);

	if (res)
		reply_res(req, res);
	else
		fuse_reply_attr(req, &st, ws_attr_timeout(inode_of(ino)));
}

void ws_attr_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int fd = use(ino);

	(void)fi;
	if (fd < 0) {
		reply_res(req, fd);
		return;
	}
	reply_attr(req, ino, fd);
	put(ino);
}

static int set_mode(int fd, mode_t mode)
{
	char p[PROC_FD_LEN];

	return neg_errno(chmod(proc_path(p, fd), mode));
}

static int set_owner(int fd, int valid, const struct stat *attr)
{
	uid_t uid = (valid & FUSE_SET_ATTR_UID) ? idmap_uid(attr->st_uid) : (uid_t)-1;
	gid_t gid = (valid & FUSE_SET_ATTR_GID) ? idmap_gid(attr->st_gid) : (gid_t)-1;

	return neg_errno(fchownat(fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));
}

static int set_size(int fd, struct fuse_file_info *fi, off_t size)
{
	char p[PROC_FD_LEN];

	if (fi)
		return neg_errno(ftruncate(file_fd(fi), size));
	return neg_errno(truncate(proc_path(p, fd), size));
}

/* utimensat with AT_EMPTY_PATH works on the O_PATH fd itself: a symlink's own times. */
static int set_times(int fd, int valid, const struct stat *attr)
{
	struct timespec tv[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_OMIT}};

	if (valid & FUSE_SET_ATTR_ATIME_NOW)
		tv[0].tv_nsec = UTIME_NOW;
	else if (valid & FUSE_SET_ATTR_ATIME)
		tv[0] = attr->st_atim;
	if (valid & FUSE_SET_ATTR_MTIME_NOW)
		tv[1].tv_nsec = UTIME_NOW;
	else if (valid & FUSE_SET_ATTR_MTIME)
		tv[1] = attr->st_mtim;
	return neg_errno(utimensat(fd, "", tv, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));
}

/* Whether a write by someone without CAP_FSETID must clear bits of mode: S_ISUID, and S_ISGID
 * of a group-executable file (a mandatory-locking one keeps it), as the VFS does. */
mode_t ws_attr_sxid_to_kill(mode_t mode)
{
	mode_t kill = mode & S_ISUID;

	if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		kill |= S_ISGID;
	return kill;
}

/* The request asked to kill suid/sgid (killpriv v2): the daemon's own write or truncate would
 * not, having CAP_FSETID. */
int ws_attr_kill_suidgid(int fd)
{
	char p[PROC_FD_LEN];
	struct stat st;
	mode_t kill;

	if (!ws_dev_take_kill_suidgid())
		return 0;
	if (ws_stat_fd(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return 0;
	kill = ws_attr_sxid_to_kill(st.st_mode);
	if (!kill)
		return 0;
	return neg_errno(chmod(proc_path(p, fd), st.st_mode & 07777 & ~kill));
}

/* fi, when given, is an open regular file being truncated (ftruncate, O_TRUNC); everything
 * else goes through the inode fd, which is also right for directories and symlinks. The kernel
 * has checked the caller's rights. */
void ws_attr_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid,
		     struct fuse_file_info *fi)
{
	int fd = use(ino), res = 0;

	if (fd < 0) {
		reply_res(req, fd);
		return;
	}
	if (valid & FUSE_SET_ATTR_MODE)
		res = set_mode(fd, attr->st_mode);
	if (!res && (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
		res = set_owner(fd, valid, attr);
	if (!res && (valid & FUSE_SET_ATTR_SIZE))
		res = set_size(fd, fi, attr->st_size);
	if (!res && (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
			      FUSE_SET_ATTR_MTIME_NOW)))
		res = set_times(fd, valid, attr);
	if (!res)
		res = ws_attr_kill_suidgid(fd);
	if (res)
		reply_res(req, res);
	else
		reply_attr(req, ino, fd);
	put(ino);
}

void ws_attr_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[PATH_MAX + 1];
	int fd = use(ino);
	ssize_t n;

	if (fd < 0) {
		reply_res(req, fd);
		return;
	}
	if (ws_view_hold_links()) {
		put(ino);
		reply_res(req, -ELOOP); /* as the nosymfollow mount about to cover us answers */
		return;
	}
	n = readlinkat(fd, "", buf, sizeof(buf));
	put(ino);
	if (n == -1) {
		fuse_reply_err(req, errno);
		return;
	}
	if ((size_t)n == sizeof(buf)) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	buf[n] = '\0';
	fuse_reply_readlink(req, buf);
}

/* ---- file system, xattrs, access ---- */

void ws_attr_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st;
	int fd = use(ino), rc;

	if (fd < 0) {
		reply_res(req, fd);
		return;
	}
	rc = fstatvfs(fd, &st);
	put(ino);
	if (rc == -1)
		fuse_reply_err(req, errno);
	else
		fuse_reply_statfs(req, &st);
}

/* xattr calls cannot take O_PATH fds; the following variants on the magic link reach the
 * inode itself (for a symlink, the link and not its target: l* would name the magic link). */
void ws_attr_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		      size_t size, int flags)
{
	char p[PROC_FD_LEN];
	int fd = use(ino);

	if (fd < 0) {
		reply_res(req, fd);
		return;
	}
	reply_res(req, neg_errno(setxattr(proc_path(p, fd), name, value, size, flags)));
	put(ino);
}

/* Reads the value of xattr name, or the list of names when name is NULL, into a buffer of
 * size (0: asks for the size only), and replies it. */
static void read_xattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	char p[PROC_FD_LEN], *buf;
	int fd = use(ino);
	ssize_t n;

	if (fd < 0) {
		reply_res(req, fd);
		return;
	}
	buf = size ? xmalloc(size) : NULL;
	proc_path(p, fd);
	n = name ? getxattr(p, name, buf, size) : listxattr(p, buf, size);
	if (n == -1)
		fuse_reply_err(req, errno);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	put(ino);
	free(buf);
}

void ws_attr_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	read_xattr(req, ino, name, size);
}

void ws_attr_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	read_xattr(req, ino, NULL, size);
}

void ws_attr_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	char p[PROC_FD_LEN];
	int fd = use(ino);

	if (fd < 0) {
		reply_res(req, fd);
		return;
	}
	reply_res(req, neg_errno(removexattr(proc_path(p, fd), name)));
	put(ino);
}

/* Checked as the daemon; only reached when the mount lacks default_permissions. */
void ws_attr_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	char p[PROC_FD_LEN];
	int fd = use(ino);

	if (fd < 0) {
		reply_res(req, fd);
		return;
	}
	reply_res(req, neg_errno(faccessat(AT_FDCWD, proc_path(p, fd), mask, 0)));
	put(ino);
}
