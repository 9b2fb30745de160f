/* The workspace's owner mapping (sshfs's idmap=user): through workspace/, files of the
 * sandbox's user show as the mount owner's and the mount owner's as the sandbox user's, so
 * both can change every file while ownership stays a bijection. Other ids pass unchanged. */
#ifndef SBX_IDMAP_H
#define SBX_IDMAP_H

#include <sys/stat.h>
#include <sys/types.h>

/* Turns the swap on (never called: no mapping). */
void idmap_swap(uid_t owner_uid, gid_t owner_gid, uid_t sandbox_uid, gid_t sandbox_gid);
/* A swap is its own inverse: the same calls map ids going out and coming in. */
uid_t idmap_uid(uid_t uid);
gid_t idmap_gid(gid_t gid);
void idmap_stat(struct stat *st);

#endif
