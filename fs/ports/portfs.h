/* ports/ at the mount's root: the sandbox's exposed ports as directories named by the port,
 * their files, and ports/expose. portfs.c owns names, attributes, listings, mkdir and rmdir;
 * portfile.c the open files. Every inode of the ports part is one here; portfs.c has its
 * operation table. */
#ifndef SBX_PORTFS_H
#define SBX_PORTFS_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>

#include "help.h"

extern const struct fuse_lowlevel_ops port_ops;

/* Adds the ports part's files to the mount's README. */
void port_help(struct help *h);

fuse_ino_t portfs_root_ino(void);
/* The root's "ports" entry, as a lookup answers it. */
int portfs_root_entry(struct fuse_entry_param *e);
/* Frees handles the kernel never released (unmount). */
void portfile_shutdown(void);

#endif
