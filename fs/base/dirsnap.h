/* Directory listings of the control tree, of terminals, of contexts and of the mount's root:
 * built whole at opendir and served by index, so readdir and readdirplus read the names of
 * one opendir whatever changes after it. */
#ifndef SBX_DIRSNAP_H
#define SBX_DIRSNAP_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <stdint.h>
#include <sys/types.h>

struct dirsnap_entry {
	char *name;
	fuse_ino_t ino;
	mode_t mode; /* its type only */
};

/* What readdirplus gives of the entries other than "." and "..". */
struct dirsnap_plus {
	/* Fills e (its attr holds the entry's ino and type); e->ino 0: no attributes given. */
	void (*fill)(const struct dirsnap_entry *de, struct fuse_entry_param *e);
	/* May be NULL. An entry filled but not sent (the reply was full): undoes the lookup the
	 * fill counted. */
	void (*unsent)(const struct fuse_entry_param *e);
};

struct dirsnap {
	struct dirsnap_entry *e;
	size_t n;
	const struct dirsnap_plus *plus;
};

/* A listing of ino whose parent is parent: "." and ".." already in it. */
struct dirsnap *dirsnap_new(fuse_ino_t ino, fuse_ino_t parent);
void dirsnap_add(struct dirsnap *d, const char *name, fuse_ino_t ino, mode_t mode);
/* Answers opendir: the listing becomes the open directory's, and plus says what readdirplus
 * gives of its entries. */
void dirsnap_open(fuse_req_t req, struct dirsnap *d, const struct dirsnap_plus *plus,
		  struct fuse_file_info *fi);
/* readdir, readdirplus and releasedir of an open listing, as a part's ops table has them. */
void dirsnap_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi);
void dirsnap_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			 struct fuse_file_info *fi);
void dirsnap_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

#endif
