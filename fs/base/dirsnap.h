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

struct dirsnap {
	struct dirsnap_entry *e;
	size_t n;
};

/* What readdirplus gives of the entries other than "." and "..". */
struct dirsnap_plus {
	/* Fills e (its attr holds the entry's ino and type); e->ino 0: no attributes given. */
	void (*fill)(const struct dirsnap_entry *de, struct fuse_entry_param *e);
	/* May be NULL. An entry filled but not sent (the reply was full): undoes the lookup the
	 * fill counted. */
	void (*unsent)(const struct fuse_entry_param *e);
};

/* A listing of ino whose parent is parent: "." and ".." already in it. */
struct dirsnap *dirsnap_new(fuse_ino_t ino, fuse_ino_t parent);
void dirsnap_add(struct dirsnap *d, const char *name, fuse_ino_t ino, mode_t mode);
/* Answers opendir: the listing becomes the open directory's. */
void dirsnap_open(fuse_req_t req, struct dirsnap *d, struct fuse_file_info *fi);
/* Answers readdir (plus NULL) or readdirplus from the open directory's listing. */
void dirsnap_read(fuse_req_t req, struct fuse_file_info *fi, size_t size, off_t off,
		  const struct dirsnap_plus *plus);
/* Answers releasedir: frees the listing. */
void dirsnap_release(fuse_req_t req, struct fuse_file_info *fi);

#endif
