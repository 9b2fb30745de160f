/* ports/ at the mount's root: the sandbox's exposed ports as directories named by the port,
 * their files, and ports/expose. portfs.c owns names, attributes, listings, mkdir and rmdir;
 * portfile.c the open files. ops.c routes every inode ino_is_xport() says is one here. */
#ifndef SBX_PORTFS_H
#define SBX_PORTFS_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "ino.h"

/* portfs.c */
fuse_ino_t portfs_root_ino(void);
/* The root's "ports" entry, as a lookup answers it. */
int portfs_root_entry(struct fuse_entry_param *e);
void portfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void portfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void portfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		    struct fuse_file_info *fi);
void portfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void portfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void portfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void portfs_readdir(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi, bool plus);
/* The mode of a kind of ports/ (0: none). */
mode_t portfs_mode(enum ctl_kind k);

/* portfile.c */
/* The text a file of an exposure reads (NULL if the exposure is gone). Caller frees. */
char *portfile_render(fuse_ino_t ino, size_t *len);
void portfile_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void portfile_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi);
void portfile_write(fuse_req_t req, const char *buf, size_t size, struct fuse_file_info *fi);
void portfile_flush(fuse_req_t req, struct fuse_file_info *fi);
void portfile_release(fuse_req_t req, struct fuse_file_info *fi);
void portfile_poll(fuse_req_t req, struct fuse_file_info *fi, struct fuse_pollhandle *ph);
/* Frees handles the kernel never released (unmount). */
void portfile_shutdown(void);

#endif
