/* snapshots/ at the mount's root: snapfs.c owns its names, attributes, directories, mkdir,
 * rmdir and create; snapfile.c its control files (clone, ctl, import/NAME, a snapshot's
 * status, ctl and archive); snapview.c the read-only files/ view of each snapshot. ops.c
 * routes every inode ino_is_snap() says is one here. */
#ifndef SBX_SNAPFS_H
#define SBX_SNAPFS_H

#include <stdbool.h>
#include <sys/stat.h>

#include "snapino.h"

/* snapfs.c */
int snapfs_root_entry(struct fuse_entry_param *e);
fuse_ino_t snapfs_root_ino(void);
void snapfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void snapfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void snapfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		    struct fuse_file_info *fi);
void snapfs_readlink(fuse_req_t req, fuse_ino_t ino);
/* While hold is set, files/ views answer readlink with ELOOP (see snapfs.c). */
void snapfs_hold_links(bool hold);
void snapfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void snapfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void snapfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void snapfs_readdir(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi, bool plus);
void snapfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void snapfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);

/* snapfile.c: open files, a files/ view's included (opened by snapview.c). */
void snapfs_create(fuse_req_t req, fuse_ino_t parent, const char *name, struct fuse_file_info *fi);
void snapfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void snapfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void snapfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		  struct fuse_file_info *fi);
void snapfs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void snapfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void snapfs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi);
/* Frees handles the kernel never released, and the views (unmount). */
void snapfile_shutdown(void);

#endif
