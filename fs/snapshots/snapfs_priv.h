/* What snapfs.c, snapfile.c and snapview.c share: the attributes of a snapshot's control
 * files, and the files/ view's nodes. */
#ifndef SBX_SNAPFS_PRIV_H
#define SBX_SNAPFS_PRIV_H

#include <stdbool.h>
#include <sys/stat.h>

#include "snapfs.h"
#include "snapino.h"

struct dirsnap;

/* snapfs.c: the attributes of a control inode (the view's are snapview.c's): 0 or -ENOENT. */
int snapfs_stat(fuse_ino_t ino, struct stat *st);
/* The entry of ino, as lookup and mkdir answer it. */
void snapfs_reply_entry(fuse_req_t req, fuse_ino_t ino);

/* snapfile.c: open files, a files/ view's included (opened by snapview.c), as snap_ops has
 * them. */
void snapfs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		   struct fuse_file_info *fi);
void snapfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void snapfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void snapfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		  struct fuse_file_info *fi);
void snapfs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void snapfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void snapfs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi);

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
