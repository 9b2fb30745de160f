/* A session's terms/ as files: termfs.c owns its names, attributes, directories, mkdir and
 * rmdir, and the part's operation table; termfile.c a terminal's open files. Every inode of
 * the terms part is one here: terms/ itself, each terminal's directory and its files. */
#ifndef SBX_TERMFS_H
#define SBX_TERMFS_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>

#include "help.h"

extern const struct fuse_lowlevel_ops term_ops;

/* Adds the terms part's files to the mount's README. */
void term_help(struct help *h);

/* Frees handles the kernel never released (unmount). */
void termfile_shutdown(void);

#endif
