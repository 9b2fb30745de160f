/* One mount at a time (see samemount.h): openat2 with RESOLVE_NO_XDEV refuses to cross into a
 * mount, bind mounts included; statx says whether a name is a mount's root (or, on an older
 * kernel, its mount id is compared with its directory's), where st_dev cannot tell (a bind
 * mount of the same filesystem shares it). */
#include "samemount.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

int open_here(int dir, const char *name, int flags)
{
	struct open_how how = {.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};

	return (int)syscall(SYS_openat2, dir, name, &how, sizeof(how));
}

static void to_stat(const struct statx *x, struct stat *st)
{
	*st = (struct stat){
	    .st_dev = makedev(x->stx_dev_major, x->stx_dev_minor),
	    .st_ino = x->stx_ino,
	    .st_mode = x->stx_mode,
	    .st_nlink = x->stx_nlink,
	    .st_uid = x->stx_uid,
	    .st_gid = x->stx_gid,
	    .st_rdev = makedev(x->stx_rdev_major, x->stx_rdev_minor),
	    .st_size = (off_t)x->stx_size,
	    .st_blksize = x->stx_blksize,
	    .st_blocks = (blkcnt_t)x->stx_blocks,
	    .st_atim = {x->stx_atime.tv_sec, x->stx_atime.tv_nsec},
	    .st_mtim = {x->stx_mtime.tv_sec, x->stx_mtime.tv_nsec},
	    .st_ctim = {x->stx_ctime.tv_sec, x->stx_ctime.tv_nsec},
	};
}

int lstat_here(int dir, const char *name, struct stat *st)
{
	struct statx parent, x;

	if (statx(dir, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
		  STATX_BASIC_STATS | STATX_MNT_ID, &x) < 0)
		return -1;
	to_stat(&x, st);
	/* One call a name: the kernel says whether it is the root of a mount (5.8 and later);
	 * else its mount is compared with the directory's. */
	if (x.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) {
		if (!(x.stx_attributes & STATX_ATTR_MOUNT_ROOT))
			return 0;
	} else if (!(x.stx_mask & STATX_MNT_ID) ||
		   statx(dir, "", AT_EMPTY_PATH, STATX_MNT_ID, &parent) < 0 ||
		   !(parent.stx_mask & STATX_MNT_ID) || x.stx_mnt_id == parent.stx_mnt_id) {
		return 0;
	}
	errno = EXDEV;
	return -1;
}
