/* What the host gets at MOUNT/workspace, and what the `limits` file says of it: the kernel
 * mount of the backing directory, or the FUSE workspace (by configuration, or as a fallback),
 * which a nosymfollow bind of itself covers so that the host follows no symlink there either. */
#ifndef SBX_WS_VIEW_H
#define SBX_WS_VIEW_H

#include <stdbool.h>
#include <sys/types.h>

struct ws_view_spec {
	const char *backing; /* absolute path of the backing directory */
	bool kernel;	     /* [workspace] mount = kernel */
	bool symfollow;	     /* [workspace] host_symlinks = follow */
	bool idmap;	     /* [sandbox] idmap = user: the kernel mount swaps the two users' ids */
	uid_t owner_uid, sandbox_uid;
	gid_t owner_gid, sandbox_gid;
};

/* Before anything reaps children (the kernel mount's idmap forks): prepares the kernel mount
 * when asked for and possible, else settles for the FUSE workspace and says why. */
void ws_view_prepare(const struct ws_view_spec *s);
/* Once the session serves (the mounts look MOUNT/workspace up): attaches the view on
 * mountpoint/workspace in a thread, logging what it became (a warning where it is less than
 * asked for: a fallback to FUSE, links followed), then calls settled (from that thread): only
 * then is the mount whole, so an unmount right after the start finds what it has to undo. */
void ws_view_attach(const char *mountpoint, void (*settled)(void));
/* The `limits` line of what is on MOUNT/workspace now, by the mount table: "workspace kernel",
 * "workspace fuse" or "workspace fuse-fallback WHY" ("workspace starting" until attached,
 * "workspace detached: ..." once the kernel mount is gone). Caller frees. */
char *ws_view_describe(void);
/* Whether the host follows links in workspace/ now (by the mount table); why (at most whylen)
 * when nofollow was asked for, "" when links are followed by configuration. */
bool ws_view_follows(char *why, size_t whylen);
/* Whether the FUSE workspace must not give symlink targets: the host is to follow none, and the
 * mount that enforces it is not attached yet, or the kernel mount covers the FUSE view. */
bool ws_view_hold_links(void);

#endif
