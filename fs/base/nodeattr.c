/* Attributes of the files sbxfs makes up (see nodeattr.h). */
#include "nodeattr.h"

#include <string.h>
#include <unistd.h>

static struct timespec mount_time;

void nodeattr_init(struct stat *st, fuse_ino_t ino, mode_t mode, const struct timespec *t)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = mode;
	st->st_nlink = S_ISDIR(mode) ? 2 : 1;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_blksize = 4096;
	st->st_mtim = st->st_ctim = st->st_atim = t ? *t : mount_time;
}

void nodeattr_blocks(struct stat *st)
{
	st->st_blocks = (st->st_size + 511) / 512;
}

bool nodeattr_settable(mode_t mode, const struct stat *attr, int to_set)
{
	const int harmless = FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
			     FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW |
			     FUSE_SET_ATTR_CTIME;

	return S_ISREG(mode) && (mode & S_IWUSR) && !(to_set & ~harmless) &&
	       (!(to_set & FUSE_SET_ATTR_SIZE) || attr->st_size == 0);
}

__attribute__((constructor)) static void nodeattr_start(void)
{
	clock_gettime(CLOCK_REALTIME, &mount_time);
}

void nodeattr_reply(fuse_req_t req, int rc, const struct stat *st)
{
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, st, 0);
}
