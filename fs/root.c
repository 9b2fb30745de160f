/* The mount's root, a part above the others: its names are theirs. The control part gives its
 * own (README, env, limits, network/, procs/, sessions/: ctl.h); each other part has one
 * directory here (parts[]). The root's attributes are the control part's inode 1. */
#include "root.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl.h"
#include "ctxfs.h"
#include "dirsnap.h"
#include "help.h"
#include "nodeattr.h"
#include "portfs.h"
#include "snapfs.h"
#include "termfs.h"
#include "workspace.h"

/* The mount's root never changes (its names are fixed), and the kernel checks its search
 * permission at every path walk through the mount: let it keep the attributes, or every
 * open or stat of a path under workspace/ costs a GETATTR of the root first. */
#define ROOT_ATTR_TIMEOUT 3600.0

/* The directory each other part has at the root. */
static const struct root_part {
	const char *name;
	fuse_ino_t (*ino)(void);
	/* The entry a lookup answers; workspace/'s counts one kernel lookup of its inode. */
	int (*entry)(struct fuse_entry_param *e);
} parts[] = {
    {"contexts", ctxfs_root_ino, ctxfs_root_entry},
    {"ports", portfs_root_ino, portfs_root_entry},
    {"snapshots", snapfs_root_ino, snapfs_root_entry},
    {"workspace", ws_root_ino, ws_root_entry},
};

#define NPARTS (sizeof(parts) / sizeof(parts[0]))

static const struct root_part *find(const char *name)
{
	for (size_t i = 0; i < NPARTS; i++)
		if (strcmp(name, parts[i].name) == 0)
			return &parts[i];
	return NULL;
}

static int name_entry(const char *name, struct fuse_entry_param *e)
{
	const struct root_part *p = find(name);

	return p ? p->entry(e) : ctl_root_entry(name, e);
}

static void root_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e = {0};
	int rc = name_entry(name, &e);

	(void)parent;
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_entry(req, &e);
}

static void root_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	int rc = ctl_stat(ino, &st, fi, true);

	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, ROOT_ATTR_TIMEOUT);
}

/* `touch` of the mount point sets nothing, as on any of our directories. */
static void root_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			 struct fuse_file_info *fi)
{
	struct stat st;

	if (ctl_stat(ino, &st, fi, true) < 0 || !nodeattr_settable(st.st_mode, attr, to_set))
		fuse_reply_err(req, EPERM);
	else
		root_getattr(req, ino, fi);
}

/* The control part's entries as its own listings give them; the others as a lookup does. */
static void plus_fill(const struct dirsnap_entry *de, struct fuse_entry_param *e)
{
	const struct root_part *p = find(de->name);

	if (!p)
		ctl_plus_fill(de, e);
	else if (p->entry(e) < 0)
		*e = (struct fuse_entry_param){.attr = {.st_ino = de->ino, .st_mode = de->mode}};
}

/* workspace/'s entry counted a lookup the kernel will never see. */
static void plus_unsent(const struct fuse_entry_param *e)
{
	if (ws_is_ino(e->ino))
		ws_name_forget_one(e->ino, 1);
}

static const struct dirsnap_plus root_plus = {plus_fill, plus_unsent};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct dirsnap_entry *)a)->name,
		      ((const struct dirsnap_entry *)b)->name);
}

/* In the order of their names, as ls -f shows them. */
static void root_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dirsnap *d = dirsnap_new(ino, ino);

	ctl_list_root(d);
	for (size_t i = 0; i < NPARTS; i++)
		dirsnap_add(d, parts[i].name, parts[i].ino(), S_IFDIR);
	qsort(d->e + 2, d->n - 2, sizeof(*d->e), by_name);
	dirsnap_open(req, d, &root_plus, fi);
}

/* The workspace is the host's directory: one line, no kinds. */
static void root_help(struct help *h)
{
	help_add(h, "", "workspace", true, "the shared workspace (commands see it as /workspace)");
}

static const char readme_head[] =
    "sbxfs: a sandbox you drive with echo, cat and ls\n"
    "\n"
    "Every file of the mount, a line each (ID, N, NAME, PORT: yours):\n"
    "\n";

static const char readme_tail[] = "\n"
				  "Example:\n"
				  "  mkdir sessions/test\n"
				  "  echo 'export NODE_ENV=test' > sessions/test/cmd\n"
				  "  echo 'npm test' > sessions/test/cmd\n"
				  "  cat sessions/test/stdout\n"
				  "  cat sessions/test/exit\n"
				  "  rmdir sessions/test\n";

char *root_readme(void)
{
	struct help h = {0};

	root_help(&h);
	ctl_help(&h);
	term_help(&h);
	port_help(&h);
	ctx_help(&h);
	snap_help(&h);
	return help_render(&h, readme_head, readme_tail);
}

const struct fuse_lowlevel_ops root_ops = {
    .lookup = root_lookup,
    .getattr = root_getattr,
    .setattr = root_setattr,
    .opendir = root_opendir,
    .readdir = dirsnap_readdir,
    .readdirplus = dirsnap_readdirplus,
    .releasedir = dirsnap_releasedir,
};
