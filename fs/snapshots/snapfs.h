/* snapshots/ at the mount's root: snapfs.c owns its names, attributes, directories, mkdir,
 * rmdir, and the part's operation table; snapfile.c its control files (clone, ctl,
 * import/NAME, a snapshot's status, ctl and archive); snapview.c the read-only files/ view of
 * each snapshot. Every inode of the snapshots part is one here. */
#ifndef SBX_SNAPFS_H
#define SBX_SNAPFS_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <stdbool.h>

#include "help.h"

extern const struct fuse_lowlevel_ops snap_ops;
/* Each snapshot's files/, read-only (snapview.c). */
extern const struct fuse_lowlevel_ops view_ops;

/* Adds the snapshots part's files to the mount's README. */
void snap_help(struct help *h);

/* The root's "snapshots" entry, as a lookup answers it. */
int snapfs_root_entry(struct fuse_entry_param *e);
fuse_ino_t snapfs_root_ino(void);
/* While hold is set, files/ views answer readlink with ELOOP (see snapfs.c). */
void snapfs_hold_links(bool hold);
/* Frees handles the kernel never released, and the views (unmount). */
void snapfile_shutdown(void);

#endif
