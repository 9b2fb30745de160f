/* What snapfs.c, snapfile.c and snapview.c share: the attributes of a snapshot's control
 * files, and the files/ view's nodes. */
#ifndef SBX_SNAPFS_PRIV_H
#define SBX_SNAPFS_PRIV_H

#include <stdbool.h>
#include <sys/stat.h>

#include "snapfs.h"

struct dirsnap;

/* snapfs.c: the attributes of a control inode (the view's are snapview.c's): 0 or -ENOENT. */
int snapfs_stat(fuse_ino_t ino, struct stat *st);
/* The entry of ino, as lookup and mkdir answer it. */
void snapfs_reply_entry(fuse_req_t req, fuse_ino_t ino);

/* snapview.c: files/ of snapshot serial and what is in it, node 0 being files/ itself. */
/* The attributes of node: 0 or -errno. */
int snapview_stat(fuse_ino_t ino, struct stat *st);
/* The node named name in the directory node parent: its entry, or -errno. */
int snapview_lookup(fuse_ino_t parent, const char *name, struct fuse_entry_param *e);
void snapview_readlink(fuse_req_t req, fuse_ino_t ino);
/* The listing of a directory node, or -errno. */
int snapview_list(fuse_ino_t ino, struct dirsnap **d);
/* An open of a regular node for reading: its fd, or -errno. */
int snapview_open(fuse_ino_t ino);
void snapview_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void snapview_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void snapview_shutdown(void);

#endif
