/* contexts/ in the control tree: ctxfs.c owns its names, attributes, directories, mkdir and
 * rmdir; ctxfile.c its open files. ops.c routes every inode ctx_is_ino() says is one here. */
#ifndef SBX_CTXFS_H
#define SBX_CTXFS_H

#include <stdbool.h>
#include <sys/stat.h>

#include "ctxino.h"

struct context;
struct cell;

/* ctxfs.c */
/* The root's "contexts" entry, as a lookup answers it. */
int ctxfs_root_entry(struct fuse_entry_param *e);
fuse_ino_t ctxfs_root_ino(void);
int ctxfs_stat(fuse_ino_t ino, struct stat *st, struct fuse_file_info *fi, bool held);
void ctxfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void ctxfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ctxfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		   struct fuse_file_info *fi);
void ctxfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void ctxfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void ctxfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/* readdir (plus false) or readdirplus of a directory ctxfs_opendir opened (a dirsnap). */
void ctxfs_readdir(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi, bool plus);
/* The context (referenced) and, for a cell's file, the cell (referenced; latest when n is 0,
 * may be NULL before the first cell): -ENOENT when gone. */
int ctxfs_resolve(fuse_ino_t ino, struct context **c, struct cell **cell);

/* ctxfile.c */
void ctxfile_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ctxfile_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi);
void ctxfile_write(fuse_req_t req, const char *buf, size_t size, struct fuse_file_info *fi);
void ctxfile_flush(fuse_req_t req, struct fuse_file_info *fi);
void ctxfile_release(fuse_req_t req, struct fuse_file_info *fi);
void ctxfile_poll(fuse_req_t req, struct fuse_file_info *fi, struct fuse_pollhandle *ph);
/* fstat through an open handle: its snapshot's size. */
int ctxfile_stat(struct fuse_file_info *fi, struct stat *st);
/* Frees handles the kernel never released (unmount). */
void ctxfile_shutdown(void);

#endif
