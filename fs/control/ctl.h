/* The control tree: sessions/ and each session's files, procs/, network/, and the root's files
 * (fs/root.c lists them). Its inodes' kinds (ctlino.h) each have a row (ctlkind.h) that says
 * what the kind is and does: ctltree.c owns attributes and entries and the part's operation
 * table, ctlnames.c lookups and listings, ctlmkdir.c mkdir and rmdir, ctlfile.c, ctlread.c and
 * ctlwrite.c open files. */
#ifndef SBX_CTL_H
#define SBX_CTL_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <stdbool.h>

#include "ctlino.h"
#include "dirsnap.h"
#include "help.h"

extern const struct fuse_lowlevel_ops ctl_ops;

/* Fills st for a control inode; -ENOENT if it no longer exists, unless held (a getattr: the
 * kernel holds the inode, maybe open). */
int ctl_stat(fuse_ino_t ino, struct stat *st, struct fuse_file_info *fi, bool held);
/* The entry a lookup of a control inode answers. */
int ctl_entry(fuse_ino_t ino, struct fuse_entry_param *e);
/* The entry readdirplus gives of a control inode. */
void ctl_plus_fill(const struct dirsnap_entry *de, struct fuse_entry_param *e);
/* The control part's names at the mount's root: the entry of one (-ENOENT: not one of them),
 * or all of them added to the root's listing. */
int ctl_root_entry(const char *name, struct fuse_entry_param *e);
void ctl_list_root(struct dirsnap *d);
/* Adds the control part's files to the mount's README, and sets the text it reads. */
void ctl_help(struct help *h);
void ctl_set_readme(const char *text);
/* Frees handles the kernel never released (it sends no RELEASE after unmount). */
void ctlfile_shutdown(void);

#endif
