/* Who sandboxed processes run as: a named unprivileged user (created if missing) when the
 * daemon is root, else the daemon's own user (uidpool.h gives the per-instance uids); the
 * account files the sandbox sees for it; and dropping to it in a child. */
#ifndef SBX_IDENTITY_H
#define SBX_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct identity {
	uid_t uid;
	gid_t gid;
};

/* Resolves (and as root creates) the sandbox user. 0 or -errno with a reason. */
int identity_resolve(const char *user, struct identity *id, char *err, size_t errlen);
/* The sandbox's /etc/passwd (group false) or /etc/group (group true) for an id the host has
 * no entry for: root, the sandbox's user as "sbxfs" with home, and nobody. A memfd or -errno. */
int identity_etc_fd(const struct identity *id, const char *home, bool group);
/* In a child about to exec: no groups, the identity's gid and uid, no new privileges. Returns
 * -errno if any step failed (the child must not go on). */
int identity_drop(const struct identity *id);
/* A pipe owned by owner (NULL: the daemon), so that a process of owner's can open it through
 * /proc; 0 or -errno (drawing on the descriptor reserve). */
int identity_pipe(int p[2], const struct identity *owner);

#endif
