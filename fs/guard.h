/* The host's guard over the trees of the mount whose names and links the sandbox chooses:
 * workspace/ (covered by its view, ws_view.h) and snapshots/ (covered here). No path the host
 * resolves through them follows a link the sandbox made: a nosymfollow mount covers each, and
 * until it is on the FUSE side gives no link's target. */
#ifndef SBX_GUARD_H
#define SBX_GUARD_H

#include <stdbool.h>

/* Before the mount: whether the host is to follow no link (host_symlinks = nofollow). */
void guard_prepare(bool nofollow);
/* Once the mount is up and served (from ws_view's attach thread): covers each tree. */
void guard_attach(const char *mountpoint);
/* The `limits` lines: the workspace's, then "host_symlinks nofollow" when every tree is covered
 * now (by the mount table), else "host_symlinks follow" with why. Caller frees. */
char *guard_describe(void);

#endif
