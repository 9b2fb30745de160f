/* Reading a tar stream from outside (an import): a parser fed bytes as they come, that hands
 * each entry and its data to a sink, and refuses what a snapshot may not hold: a path that is
 * absolute or climbs out with "..", a symlink that points out of the tree, a hard link to a
 * path that is not one, devices, FIFOs and every other kind of entry, GNU sparse files, more
 * entries or bytes than its limits. It does no I/O itself (the fuzz target drives it). */
#ifndef SBX_TARREAD_H
#define SBX_TARREAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

struct tar_xattr {
	char *name; /* user.* only */
	char *value;
	size_t len;
};

struct tar_entry {
	char type;	  /* TAR_REG, TAR_LINK, TAR_SYMLINK or TAR_DIR (tarfmt.h) */
	const char *path; /* relative, no "." or ".." or empty names; "" is the tree itself */
	const char *link; /* TAR_SYMLINK: its target (staying in the tree); TAR_LINK: the path
			   * of the file it is another name of */
	mode_t mode;	  /* permission bits */
	uint64_t size;	  /* TAR_REG: the bytes of data that follow */
	struct timespec mtime;
	const struct tar_xattr *xattrs;
	size_t nxattrs;
};

struct tar_limits {
	uint64_t entries; /* past it: -EFBIG */
	uint64_t bytes;	  /* of the regular files' data together; past it: -ENOSPC */
};

/* Each returns 0 or -errno, which ends the reading with that error. */
struct tar_sink {
	int (*entry)(void *arg, const struct tar_entry *e);
	int (*data)(void *arg, const char *buf, size_t len); /* a regular file's, in order */
	int (*done)(void *arg);				     /* its data is all there */
};

struct tar_reader;

struct tar_reader *tarr_new(const struct tar_limits *lim, const struct tar_sink *sink, void *arg);
/* The next bytes of the stream: 0, or -errno (-EINVAL for what is no tar or is refused, the
 * limits' errors, the sink's); every call after a failure fails the same. */
int tarr_feed(struct tar_reader *r, const char *buf, size_t len);
/* At the stream's end: 0 if it ended between entries, -EINVAL if it was cut short. */
int tarr_end(struct tar_reader *r);
void tarr_free(struct tar_reader *r);

/* A path of an archive as the tree's: 0 and *out (caller frees), or -EINVAL. */
int tar_path_norm(const char *in, size_t len, char **out);
/* Whether a symlink at path (normalized) with target stays in the tree: 0 or -EINVAL. */
int tar_link_ok(const char *path, const char *target);

#endif
