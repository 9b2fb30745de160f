/* Walking a tree on one mount only: a host-side walk of the workspace (the hand-over, a
 * snapshot, a restore, an archive) neither enters nor changes a mount nested in it, whatever its
 * filesystem (a bind mount of the same one too), and follows no link. */
#ifndef SBX_SAMEMOUNT_H
#define SBX_SAMEMOUNT_H

#include <sys/stat.h>

/* openat of one name in dir without following a link or crossing into another mount: -1 with
 * errno EXDEV for a mount point, ELOOP for a link (O_PATH | O_NOFOLLOW opens a link itself). */
int open_here(int dir, const char *name, int flags);
/* fstatat(dir, name, st, AT_SYMLINK_NOFOLLOW), or -1 with errno EXDEV when name is a mount
 * point (st then describes what is mounted there). */
int lstat_here(int dir, const char *name, struct stat *st);

#endif
