/* contexts/ at the mount's root: ctxfs.c owns its names, attributes, directories, mkdir and
 * rmdir, and the part's operation table; ctxfile.c its open files. Every inode of the contexts
 * part is one here. */
#ifndef SBX_CTXFS_H
#define SBX_CTXFS_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>

#include "help.h"

extern const struct fuse_lowlevel_ops ctx_ops;

/* Adds the contexts part's files to the mount's README. */
void ctx_help(struct help *h);

/* The root's "contexts" entry, as a lookup answers it. */
int ctxfs_root_entry(struct fuse_entry_param *e);
fuse_ino_t ctxfs_root_ino(void);
/* Frees handles the kernel never released (unmount). */
void ctxfile_shutdown(void);

#endif
