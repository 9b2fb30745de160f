/* The mounts on MOUNT/workspace. The kernel-mounted workspace: when the daemon is root, the
 * backing directory itself is mounted there, so no workspace operation reaches the daemon: the
 * host and the sandbox share one inode and one page cache, and speed and POSIX behaviour are the
 * backing filesystem's. The FUSE passthrough stays underneath, as the fallback, and is then
 * covered by a nosymfollow bind of itself. */
#ifndef SBX_WS_MOUNT_H
#define SBX_WS_MOUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct ws_mount_spec {
	const char *backing; /* absolute path of the backing directory */
	bool idmap;	     /* swap owner and sandbox ids (sbxfs's idmap = user) */
	uid_t owner_uid, sandbox_uid;
	gid_t owner_gid, sandbox_gid;
	bool symfollow; /* host_symlinks = follow */
};

/* Makes the host's view as a detached mount (nosuid, nodev, idmapped and nosymfollow as
 * asked). Call before anything reaps children (it forks a short-lived user namespace holder).
 * Returns its fd, or -errno with why set to a sentence naming what failed. */
int ws_mount_prepare(const struct ws_mount_spec *s, char *why, size_t whylen);

/* The FUSE workspace's own subtree (target, MOUNT/workspace) as a detached bind mount that is
 * nosymfollow, nosuid and nodev, for ws_mount_attach on the same target: the rest of the FUSE
 * mount keeps following links (procs/ is links the host must follow). Call while the session
 * serves (the clone looks target up). Returns its fd, or -errno with why set. */
int ws_mount_prepare_nofollow(const char *target, char *why, size_t whylen);

/* Attaches a prepared mount at target, the FUSE mount's workspace entry, whose lookup the FUSE
 * session must answer meanwhile. With keep, mfd is kept for ws_mount_detach; else it is closed
 * (a mount of the FUSE filesystem itself must not be held: the held mount would keep the FUSE
 * connection alive after the FUSE mount's own unmount, so the session would never end; the
 * FUSE unmount, lazy, takes it along). Returns 0 or -errno. */
int ws_mount_attach(int mfd, const char *target, bool keep);

/* Detaches the attached workspace (lazily: open files stay usable) without a path walk through
 * the FUSE mount, so it works once the FUSE session stopped serving. No-op if none. */
void ws_mount_detach(void);

#endif
