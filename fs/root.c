/* The mount's root: lookup, attributes and listing. Each name is served by its part: the
 * control tree's files and directories (ctl.h), contexts/ (ctxfs.h), ports/ (portfs.h),
 * snapshots/ (snapfs.h),
 * workspace/ (workspace.h);
 * the root's own attributes are the control tree's (its inode is K_ROOT's). */
#include "root.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl.h"
#include "ctxfs.h"
#include "dirsnap.h"
#include "portfs.h"
#include "snapfs.h"
#include "workspace.h"

/* The mount's root never changes (its names are fixed), and the kernel checks its search
 * permission at every path walk through the mount: let it keep the attributes, or every
 * open or stat of a path under workspace/ costs a GETATTR of the root first. */
#define ROOT_ATTR_TIMEOUT 3600.0

enum part { CONTROL, CONTEXTS, PORTS, SNAPSHOTS, WORKSPACE };

/* The root's names, in the order ls -f shows them. */
static const struct root_name {
	const char *name;
	mode_t type;
	enum part part;
	enum ctl_kind kind; /* the control tree's names: the file's kind */
} names[] = {
    {"README", S_IFREG, CONTROL, K_README},	{"contexts", S_IFDIR, CONTEXTS, K_ROOT},
    {"env", S_IFREG, CONTROL, K_ROOTENV},	{"limits", S_IFREG, CONTROL, K_LIMITS},
    {"network", S_IFDIR, CONTROL, K_NETDIR},	{"ports", S_IFDIR, PORTS, K_XPORTS},
    {"procs", S_IFDIR, CONTROL, K_ALLJOBS},	{"sessions", S_IFDIR, CONTROL, K_SESSIONS},
    {"snapshots", S_IFDIR, SNAPSHOTS, K_ROOT},	{"workspace", S_IFDIR, WORKSPACE, K_ROOT},
};

#define NNAMES (sizeof(names) / sizeof(names[0]))

static fuse_ino_t name_ino(const struct root_name *n)
{
	switch (n->part) {
	case CONTEXTS:
		return ctxfs_root_ino();
	case PORTS:
		return portfs_root_ino();
	case SNAPSHOTS:
		return snapfs_root_ino();
	case WORKSPACE:
		return ws_root_ino();
	default:
		return ctl_ino(0, n->kind, 0);
	}
}

/* The entry a lookup answers; workspace/'s counts one kernel lookup of its inode. */
static int name_entry(const struct root_name *n, struct fuse_entry_param *e)
{
	switch (n->part) {
	case CONTEXTS:
		return ctxfs_root_entry(e);
	case PORTS:
		return portfs_root_entry(e);
	case SNAPSHOTS:
		return snapfs_root_entry(e);
	case WORKSPACE:
		return ws_root_entry(e);
	default:
		return ctl_entry(name_ino(n), e);
	}
}

static const struct root_name *find(const char *name)
{
	for (size_t i = 0; i < NNAMES; i++)
		if (strcmp(name, names[i].name) == 0)
			return &names[i];
	return NULL;
}

void root_lookup(fuse_req_t req, const char *name)
{
	const struct root_name *n = find(name);
	struct fuse_entry_param e = {0};
	int rc = n ? name_entry(n, &e) : -ENOENT;

	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_entry(req, &e);
}

void root_getattr(fuse_req_t req, struct fuse_file_info *fi)
{
	struct stat st;
	int rc = ctl_stat(FUSE_ROOT_ID, &st, fi, true);

	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, ROOT_ATTR_TIMEOUT);
}

void root_opendir(fuse_req_t req, struct fuse_file_info *fi)
{
	struct dirsnap *d = dirsnap_new(FUSE_ROOT_ID, FUSE_ROOT_ID);

	for (size_t i = 0; i < NNAMES; i++)
		dirsnap_add(d, names[i].name, name_ino(&names[i]), names[i].type);
	dirsnap_open(req, d, fi);
}

/* The control tree's entries as its own listings give them; the others as a lookup does. */
static void plus_fill(const struct dirsnap_entry *de, struct fuse_entry_param *e)
{
	const struct root_name *n = find(de->name);

	if (n->part == CONTROL)
		ctl_plus_fill(de, e);
	else if (name_entry(n, e) < 0)
		*e = (struct fuse_entry_param){.attr = {.st_ino = de->ino, .st_mode = de->mode}};
}

/* workspace/'s entry counted a lookup the kernel will never see. */
static void plus_unsent(const struct fuse_entry_param *e)
{
	if (ws_is_ino(e->ino))
		ws_name_forget_one(e->ino, 1);
}

void root_readdir(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi, bool plus)
{
	static const struct dirsnap_plus root_plus = {plus_fill, plus_unsent};

	dirsnap_read(req, fi, size, off, plus ? &root_plus : NULL);
}
