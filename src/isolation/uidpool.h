/* One sandbox uid per instance: each state dir gets its own uid (and a gid of the same number)
 * from [sandbox] uid_range, recorded in the state dir so a restart reuses it, and claimed in a
 * host-wide registry so no two state dirs ever hold the same one. */
#ifndef SBX_UIDPOOL_H
#define SBX_UIDPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "identity.h"

/* One file per claimed uid, named by the uid, holding the state dir and workspace that hold
 * it; and the lock that serializes claims. */
#define UIDPOOL_REGISTRY "/var/lib/sbxfs/uids"

/* The uid recorded in state_dir if it is in [first, last] and still this state dir's in the
 * registry, else a free one of the range, claimed for state_dir and workspace. 0 or -errno
 * with a reason. */
int uidpool_claim(uint32_t first, uint32_t last, const char *state_dir, const char *workspace,
		  struct identity *id, char *err, size_t errlen);

#endif
