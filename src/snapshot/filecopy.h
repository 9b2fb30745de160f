/* One file's worth of a snapshot or a restore: its data (a reflink where the filesystem makes
 * one, else only the extents that hold data, so a sparse file stays sparse), its extended
 * attributes and the rest of what a copy keeps (owner, mode, times). */
#ifndef SBX_FILECOPY_H
#define SBX_FILECOPY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Copies size bytes of src into dst, an empty regular file: a reflink (FICLONE) while *clone,
 * which is cleared when the two filesystems cannot make one, else the data extents
 * (SEEK_DATA), holes left as holes; dst gets size bytes either way. Returns the bytes written
 * (0 for a reflink) or -errno. */
int64_t filecopy_data(int src, int dst, off_t size, bool *clone);

/* Sets on dst the extended attributes src has that a copy keeps (user.* and the POSIX ACLs:
 * security.*, labels and file capabilities, and trusted.* belong to the host, not to the
 * workspace); with prune, removes the kept ones dst has and src has not. 0, -EOPNOTSUPP when
 * dst's filesystem refused one (the others are set), or -errno. */
int filecopy_xattrs(int src, int dst, bool prune);

/* Owner, mode (without its set-id bits when strip_setid, for files) and times of st on fd, an
 * open file or directory. 0 or -errno. */
int filecopy_meta(int fd, const struct stat *st, bool strip_setid);

#endif
