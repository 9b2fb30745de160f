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

/* snapfile.c: open files, a files/ view's included, as snap_ops and view_ops have them. */
void snapfile_open_view(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
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
fuse_ino_t snapview_root_ino(uint32_t serial);
/* The attributes of node: 0 or -errno. */
int snapview_stat(fuse_ino_t ino, struct stat *st);
/* An open of a regular node for reading: its fd, or -errno. */
int snapview_open(fuse_ino_t ino);
void snapview_shutdown(void);

#endif
