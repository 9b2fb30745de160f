/* Who sandboxed processes run as: the configured unprivileged user (created if missing) when
 * the daemon is root, else the daemon's own user; and dropping to it in a child. */
#ifndef SBX_IDENTITY_H
#define SBX_IDENTITY_H

#include <stddef.h>
#include <sys/types.h>

struct identity {
	uid_t uid;
	gid_t gid;
};

/* Resolves (and as root creates) the sandbox user. 0 or -errno with a reason. */
int identity_resolve(const char *user, struct identity *id, char *err, size_t errlen);
/* In a child about to exec: no groups, the identity's gid and uid, no new privileges. Returns
 * -errno if any step failed (the child must not go on). */
int identity_drop(const struct identity *id);

#endif
