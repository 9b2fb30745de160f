/* A session's terms/ as files: termfs.c owns its names, attributes, directories, mkdir and
 * rmdir; termfile.c a terminal's open files. ops.c routes every inode ino_is_term() says is
 * one here: terms/ itself, each terminal's directory and its files. */
#ifndef SBX_TERMFS_H
#define SBX_TERMFS_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <sys/stat.h>

/* termfs.c */
void termfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void termfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void termfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		    struct fuse_file_info *fi);
void termfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void termfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void termfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/* readdir (plus false) or readdirplus of a directory termfs_opendir opened (a dirsnap). */
void termfs_readdir(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi, bool plus);

/* termfile.c */
void termfile_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void termfile_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi);
void termfile_write(fuse_req_t req, const char *buf, size_t size, struct fuse_file_info *fi);
void termfile_flush(fuse_req_t req, struct fuse_file_info *fi);
void termfile_release(fuse_req_t req, struct fuse_file_info *fi);
void termfile_poll(fuse_req_t req, struct fuse_file_info *fi, struct fuse_pollhandle *ph);
/* Frees handles the kernel never released (unmount). */
void termfile_shutdown(void);

#endif
