/* The workspace's owner swap (see idmap.h). Set once before the mount serves requests. */
#include "idmap.h"

#include <stdbool.h>

static bool on;
static uid_t owner_u, sandbox_u;
static gid_t owner_g, sandbox_g;

void idmap_swap(uid_t owner_uid, gid_t owner_gid, uid_t sandbox_uid, gid_t sandbox_gid)
{
	on = owner_uid != sandbox_uid;
	owner_u = owner_uid;
	owner_g = owner_gid;
	sandbox_u = sandbox_uid;
	sandbox_g = sandbox_gid;
}

uid_t idmap_uid(uid_t uid)
{
	if (on && uid == owner_u)
		return sandbox_u;
	if (on && uid == sandbox_u)
		return owner_u;
	return uid;
}

gid_t idmap_gid(gid_t gid)
{
	if (on && gid == owner_g)
		return sandbox_g;
	if (on && gid == sandbox_g)
		return owner_g;
	return gid;
}

void idmap_stat(struct stat *st)
{
	st->st_uid = idmap_uid(st->st_uid);
	st->st_gid = idmap_gid(st->st_gid);
}
