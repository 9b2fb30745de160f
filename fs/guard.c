/* The guard over the trees the sandbox writes (see guard.h). workspace/ is its view's to cover
 * (the kernel mount, or a nosymfollow bind of the FUSE workspace); every other such tree is
 * covered here by a nosymfollow, nosuid, nodev bind of itself, made once the mount is served
 * and left in place until the mount goes (sbxfs -u detaches it with the rest). A tree added to
 * the mount whose files or links the sandbox names goes into `covered`, and into the hostile-tree
 * test (tests/integration/test_hostile_tree.py), which fails on a tree it does not know. */
#include "guard.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "mounttab.h"
#include "snapfs.h"
#include "ws_mount.h"
#include "ws_view.h"
#include "xmalloc.h"

static const char *const covered[] = {"snapshots"};
#define NCOVERED (sizeof(covered) / sizeof(covered[0]))

static bool want; /* host_symlinks = nofollow */
static bool can;  /* and the daemon is root, so it can mount the covers */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *paths[NCOVERED];	/* MOUNT/TREE, once attached (lock) */
static char why[NCOVERED][512]; /* why a tree follows links (lock, once attached) */

void guard_prepare(bool nofollow)
{
	want = nofollow;
	can = want && geteuid() == 0;
	for (size_t i = 0; i < NCOVERED; i++)
		if (want && !can)
			snprintf(why[i], sizeof(why[i]),
				 "a daemon that is not root cannot mount %s/ nosymfollow",
				 covered[i]);
	snapfs_hold_links(can);
}

/* A nosymfollow bind of target over itself. 0, or -errno with why. */
static int cover(const char *target, char *whybuf, size_t whylen)
{
	int mfd = ws_mount_prepare_nofollow(target, whybuf, whylen), rc;

	if (mfd < 0)
		return mfd;
	if ((rc = ws_mount_attach(mfd, target, false)) < 0)
		snprintf(whybuf, whylen, "cannot mount on %s: %s", target, strerror(-rc));
	return rc;
}

void guard_attach(const char *mountpoint)
{
	for (size_t i = 0; i < NCOVERED; i++) {
		char *path = xasprintf("%s/%s", mountpoint, covered[i]), whybuf[512] = "";
		int rc = can ? cover(path, whybuf, sizeof(whybuf)) : 0;

		/* Without its cover the FUSE side goes on refusing to give a link's target. */
		if (can && rc == 0)
			snapfs_hold_links(false);
		else if (can)
			log_warnx("%s/ gives no symlink's target to the host: %s", covered[i],
				  whybuf);
		pthread_mutex_lock(&lock);
		paths[i] = path;
		if (whybuf[0])
			snprintf(why[i], sizeof(why[i]), "%s", whybuf);
		pthread_mutex_unlock(&lock);
	}
}

/* Whether the host follows links in covered tree i now; why (at most whylen) if so. */
static bool tree_follows(size_t i, char *whybuf, size_t whylen)
{
	struct mount_top top = {0};

	if (!can) {
		snprintf(whybuf, whylen, "%s", why[i]);
		return true;
	}
	if (!paths[i])
		return false; /* starting: the FUSE side holds the links */
	mounttab_top(paths[i], &top);
	if (top.found && top.nosymfollow)
		return false;
	if (why[i][0])
		snprintf(whybuf, whylen, "%s", why[i]);
	else
		snprintf(whybuf, whylen, "no nosymfollow mount covers %s/ any more", covered[i]);
	return true;
}

char *guard_describe(void)
{
	char reason[512], *ws = ws_view_describe(), *text;
	bool follows = ws_view_follows(reason, sizeof(reason));

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < NCOVERED && want && !follows; i++)
		follows = tree_follows(i, reason, sizeof(reason));
	pthread_mutex_unlock(&lock);
	if (!follows)
		text = xasprintf("%shost_symlinks nofollow\n", ws);
	else
		text = xasprintf("%shost_symlinks follow%s%s\n", ws, reason[0] ? " " : "", reason);
	free(ws);
	return text;
}
