/* The workspace passthrough: FUSE operations on inodes under workspace/, each backed by an
 * O_PATH fd of the backing directory tree, every operation relative to its parent. */
#ifndef SBX_WORKSPACE_H
#define SBX_WORKSPACE_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <stdbool.h>

struct ws_opts {
	double entry_timeout; /* seconds the kernel may cache names */
	double attr_timeout;  /* seconds the kernel may cache attributes */
	bool cache;           /* keep_cache on open; false when the backing dir changes outside */
};

/* Opens the backing directory; returns 0 or -errno. One workspace per process. */
int ws_open(const char *dir, const struct ws_opts *opts);
void ws_close(void);

/* Workspace inode numbers are even (aligned pointers); control inodes are odd. */
static inline bool ws_is_ino(fuse_ino_t ino)
{
	return (ino & 1) == 0;
}

/* Fills an entry for the workspace root and counts one kernel lookup of it. */
int ws_root_entry(struct fuse_entry_param *e);
fuse_ino_t ws_root_ino(void);

/* Capabilities the workspace wants from the connection. */
void ws_init_conn(struct fuse_conn_info *conn);

/* Handlers for requests whose inode (or parent) is a workspace inode; same signatures as
 * struct fuse_lowlevel_ops. ws_forget_one drops nlookup from a batch forget. */
extern const struct fuse_lowlevel_ops ws_ops;
void ws_forget_one(fuse_ino_t ino, uint64_t nlookup);

#endif
