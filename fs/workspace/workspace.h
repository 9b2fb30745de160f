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
	/* The workspace changes only through sbxfs and the sandbox: the kernel may keep names,
	 * attributes, data, directory listings and symlink targets, revalidating them after
	 * timeout seconds. Off: timeouts 0, data re-read at every open. */
	bool cache;
	double timeout;
	/* Kernel passthrough of file data when the daemon may (root). */
	bool passthrough;
	/* The most descriptors the workspace keeps open (0: half of RLIMIT_NOFILE); past it,
	 * unused inode fds are closed and reopened when needed. */
	unsigned long max_fds;
};

/* Opens the backing directory; returns 0 or -errno. One workspace per process. */
int ws_open(const char *dir, const struct ws_opts *opts);
void ws_close(void);

/* Any thread: workspace/ is now the kernel's mount of the backing directory (ws_mount.h), so
 * no request reaches the passthrough and the sandbox's changes need no invalidations. */
void ws_kernel_mounted(void);
/* Whether workspace/ is still served through FUSE (not yet, or never, the kernel's mount). */
bool ws_through_fuse(void);

/* Raises RLIMIT_NOFILE (each inode the kernel holds costs one O_PATH fd): the soft limit to
 * the hard one, and both to fs.nr_open when the daemon may; then sets the workspace's share. */
void ws_raise_nofile(void);

/* Hooks the session's device reads (after fuse_session_mount) so that O_TMPFILE requests,
 * which libfuse 3.14 does not know, reach the create handler. Returns 0 or -errno. */
int ws_dev_attach_session(struct fuse_session *se);
/* Once the session stopped serving, before fuse_session_destroy: frees what libfuse would
 * leak of it. */
void ws_dev_detach_session(struct fuse_session *se);

/* After mounting at the absolute path mountpoint: raises the mount's readahead once the
 * connection is up (root only). */
void ws_dev_tune_mount(const char *mountpoint);

/* Workspace inode numbers are even (aligned pointers); control inodes are odd. */
static inline bool ws_is_ino(fuse_ino_t ino)
{
	return (ino & 1) == 0;
}

/* Loop thread: drops everything the kernel holds of a FUSE-served workspace/, after its files
 * were replaced behind its back while nothing ran (a restore); nothing for the kernel mount. */
void ws_inval_everything(void);

/* Fills an entry for the workspace root and counts one kernel lookup of it. */
int ws_root_entry(struct fuse_entry_param *e);
fuse_ino_t ws_root_ino(void);

/* Capabilities and limits the workspace wants from the connection. */
void ws_init_conn(struct fuse_conn_info *conn);

/* Handlers for requests whose inode (or parent) is a workspace inode; same signatures as
 * struct fuse_lowlevel_ops. ws_name_forget_one drops nlookup from a batch forget. */
extern const struct fuse_lowlevel_ops ws_ops;
void ws_name_forget_one(fuse_ino_t ino, uint64_t nlookup);

#endif
