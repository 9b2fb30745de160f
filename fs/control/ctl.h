/* The control tree: root, README, sessions/ and each session's control files. ctltree.c owns
 * names, attributes and directories; ctlfile.c, ctlread.c and ctlwrite.c own open files. */
#ifndef SBX_CTL_H
#define SBX_CTL_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>

#include <stdbool.h>

#include "dirsnap.h"
#include "ino.h"

struct session;

/* ctltree.c */
void ctl_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void ctl_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ctl_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		 struct fuse_file_info *fi);
void ctl_readlink(fuse_req_t req, fuse_ino_t ino);
void ctl_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void ctl_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void ctl_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/* readdir (plus false) or readdirplus of a directory ctl_opendir opened (a dirsnap). */
void ctl_readdir(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi, bool plus);
/* The entry a lookup of a control inode answers. */
int ctl_entry(fuse_ino_t ino, struct fuse_entry_param *e);
/* The entry readdirplus gives of a control inode. */
void ctl_plus_fill(const struct dirsnap_entry *de, struct fuse_entry_param *e);
/* Fills st for a control inode; -ENOENT if it no longer exists, unless held (a getattr: the
 * kernel holds the inode, maybe open). */
int ctl_stat(fuse_ino_t ino, struct stat *st, struct fuse_file_info *fi, bool held);
/* The session a per-session inode belongs to (referenced), or NULL. */
struct session *ctl_session(fuse_ino_t ino);

/* ctlfile.c, ctlread.c, ctlwrite.c */
void ctl_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ctl_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi);
void ctl_write(fuse_req_t req, const char *buf, size_t size, struct fuse_file_info *fi);
void ctl_flush(fuse_req_t req, struct fuse_file_info *fi);
void ctl_release(fuse_req_t req, struct fuse_file_info *fi);
void ctl_poll(fuse_req_t req, struct fuse_file_info *fi, struct fuse_pollhandle *ph);
/* Size and mtime the file shows through an open handle (fstat), if fi is one of ours. */
int ctlfile_stat(struct fuse_file_info *fi, struct stat *st);

/* The size a file rendered at open (env, cwd, status, ...) would have now; -ENOENT for the
 * other kinds. s may be NULL for the root's files. */
int ctl_rendered_size(fuse_ino_t ino, struct session *s, off_t *size);

/* Frees handles the kernel never released (it sends no RELEASE after unmount). */
void ctlfile_shutdown(void);

/* readme.c */
extern const char readme_text[];

#endif
