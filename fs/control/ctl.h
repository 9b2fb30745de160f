/* The control tree: sessions/ and each session's files, procs/, and the root's files (fs/root.c
 * lists them). Its inodes' kinds (ino.h) each have a row (ctlkind.h) that says what the kind
 * is and does: ctltree.c owns attributes and entries, ctlnames.c lookups and listings,
 * ctlmkdir.c mkdir and rmdir, ctlfile.c, ctlread.c and ctlwrite.c open files. */
#ifndef SBX_CTL_H
#define SBX_CTL_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>

#include <stdbool.h>

#include "dirsnap.h"
#include "ino.h"

/* ctltree.c */
void ctl_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ctl_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		 struct fuse_file_info *fi);
void ctl_readlink(fuse_req_t req, fuse_ino_t ino);
/* Fills st for a control inode; -ENOENT if it no longer exists, unless held (a getattr: the
 * kernel holds the inode, maybe open). */
int ctl_stat(fuse_ino_t ino, struct stat *st, struct fuse_file_info *fi, bool held);
/* The entry a lookup of a control inode answers. */
int ctl_entry(fuse_ino_t ino, struct fuse_entry_param *e);
/* The entry readdirplus gives of a control inode. */
void ctl_plus_fill(const struct dirsnap_entry *de, struct fuse_entry_param *e);

/* ctlnames.c */
void ctl_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void ctl_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/* readdir (plus false) or readdirplus of a directory ctl_opendir opened (a dirsnap). */
void ctl_readdir(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi, bool plus);

/* ctlmkdir.c */
void ctl_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void ctl_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);

/* ctlfile.c, ctlread.c, ctlwrite.c */
void ctl_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ctl_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi);
void ctl_write(fuse_req_t req, const char *buf, size_t size, struct fuse_file_info *fi);
void ctl_flush(fuse_req_t req, struct fuse_file_info *fi);
void ctl_release(fuse_req_t req, struct fuse_file_info *fi);
void ctl_poll(fuse_req_t req, struct fuse_file_info *fi, struct fuse_pollhandle *ph);
/* Frees handles the kernel never released (it sends no RELEASE after unmount). */
void ctlfile_shutdown(void);

#endif
