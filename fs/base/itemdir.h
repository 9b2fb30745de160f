/* The directories of a part whose tree is a directory of items, each item a directory of the
 * same files (a session's terminals, the exposed ports): lookups, attributes, setattr,
 * listings and the entries they give, written once and driven by the part's description. */
#ifndef SBX_ITEMDIR_H
#define SBX_ITEMDIR_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "dirsnap.h"

struct itemdir {
	unsigned top, item; /* the kinds of the top directory and of an item's directory */
	unsigned nkinds;
	/* A kind's name and mode (mode 0: no such kind), and whether the top directory holds a
	 * file of it rather than each item (may be NULL: none does). */
	const char *(*name)(unsigned k);
	mode_t (*mode)(unsigned k);
	bool (*in_top)(unsigned k);
	/* Fills st for ino: 0, or -ENOENT once it is gone unless held (a getattr of an inode the
	 * kernel holds, maybe open: fstat keeps working). */
	int (*stat)(fuse_ino_t ino, struct stat *st, bool held);
	/* The directory of the item name names in top (0: none), and every item, listed. */
	fuse_ino_t (*find)(fuse_ino_t top, const char *name);
	void (*list)(struct dirsnap *d, fuse_ino_t top);
	/* The inode of the file of kind k in directory dir (the top, or an item's). */
	fuse_ino_t (*file)(fuse_ino_t dir, unsigned k);
	fuse_ino_t (*parent)(fuse_ino_t dir);
	const struct dirsnap_plus *plus; /* the part's: it calls itemdir_plus_fill */
};

/* The entry a lookup gives: files keep their names an hour, an item's directory none (it goes
 * by rmdir in any process, and a name made again is a new item). */
int itemdir_entry(const struct itemdir *t, fuse_ino_t ino, struct fuse_entry_param *e);
void itemdir_plus_fill(const struct itemdir *t, const struct dirsnap_entry *de,
		       struct fuse_entry_param *e);
/* The requests, as the part's operations pass them on. */
void itemdir_lookup(const struct itemdir *t, fuse_req_t req, fuse_ino_t parent, const char *name);
void itemdir_getattr(const struct itemdir *t, fuse_req_t req, fuse_ino_t ino);
void itemdir_setattr(const struct itemdir *t, fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		     int to_set);
void itemdir_opendir(const struct itemdir *t, fuse_req_t req, fuse_ino_t ino,
		     struct fuse_file_info *fi);
/* Whether ino is the top directory (mkdir and rmdir go there). */
bool itemdir_is_top(const struct itemdir *t, fuse_ino_t ino);
/* Answers a lookup, mkdir among them, with ino's entry. */
void itemdir_reply_entry(const struct itemdir *t, fuse_req_t req, fuse_ino_t ino);

#endif
