/* What the host gets at MOUNT/workspace (see ws_view.h): the choice between the kernel mount and
 * the FUSE workspace, the nosymfollow bind that covers the latter, what is logged about it, and
 * what `limits` says of it, read from the mount table. A fallback to FUSE is never silent: it is
 * a warning in the log and a line of `limits` with its reason, and so is a view that follows
 * links when asked not to. */
#include "ws_view.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "mounttab.h"
#include "workspace.h"
#include "ws_mount.h"
#include "xmalloc.h"

enum view { V_STARTING, V_KERNEL, V_FUSE, V_FALLBACK };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Under lock once ws_view_attach ran; set by ws_view_prepare before any thread reads them. */
static enum view shown = V_STARTING; /* what `limits` says */
static enum view planned;	     /* what ws_view_prepare could set up */
static int kernel_mfd = -1;	     /* the prepared kernel mount */
static bool want_nofollow;	     /* host_symlinks = nofollow */
static char *view_path;		     /* MOUNT/workspace, once attached */
static char fallback_why[512];	     /* why not the kernel mount, when asked for */
static char links_why[512];	     /* why links are followed, when nofollow was asked for */
/* Until the view is attached, the FUSE workspace refuses readlink: a host program that looks at
 * workspace/ in the first milliseconds of the mount follows no link either. Under the kernel
 * mount it keeps refusing: only what got in before the mount, or after someone detached it,
 * reaches the FUSE view there. */
static atomic_bool hold_links;

void ws_view_prepare(const struct ws_view_spec *s)
{
	struct ws_mount_spec ms = {
	    .backing = s->backing,
	    .idmap = s->idmap,
	    .owner_uid = s->owner_uid,
	    .owner_gid = s->owner_gid,
	    .sandbox_uid = s->sandbox_uid,
	    .sandbox_gid = s->sandbox_gid,
	    .symfollow = s->symfollow,
	};
	bool root = geteuid() == 0;

	want_nofollow = !s->symfollow;
	if (!s->kernel) {
		planned = V_FUSE;
	} else if (!root) {
		planned = V_FALLBACK;
		snprintf(fallback_why, sizeof(fallback_why), "mounting the workspace needs root");
	} else {
		kernel_mfd = ws_mount_prepare(&ms, fallback_why, sizeof(fallback_why));
		planned = kernel_mfd >= 0 ? V_KERNEL : V_FALLBACK;
	}
	if (want_nofollow && !root)
		snprintf(links_why, sizeof(links_why),
			 "a daemon that is not root cannot mount workspace/ nosymfollow");
	atomic_store(&hold_links, want_nofollow && root);
}

/* Covers the FUSE workspace with its nosymfollow bind. Returns 0, or -errno with links_why. */
static int bind_nofollow(const char *target)
{
	int mfd = ws_mount_prepare_nofollow(target, links_why, sizeof(links_why)), rc;

	if (mfd < 0)
		return mfd;
	if ((rc = ws_mount_attach(mfd, target, false)) < 0)
		snprintf(links_why, sizeof(links_why), "cannot mount on %s: %s", target,
			 strerror(-rc));
	return rc;
}

static void settle(const char *target)
{
	enum view v = planned;
	bool bound = false;
	int rc;

	if (kernel_mfd >= 0) {
		rc = ws_mount_attach(kernel_mfd, target, true);
		kernel_mfd = -1;
		if (rc == 0) {
			ws_kernel_mounted();
			/* The kernel refuses such opens without asking the daemon: this line is all
			 * it can log. */
			log_info("workspace/ is a kernel mount of the workspace%s",
				 want_nofollow ? "; the host follows no symlink in it (host_symlinks = "
						 "nofollow: opening one fails with ELOOP, \"Too many "
						 "levels of symbolic links\")"
					       : "");
		} else {
			v = V_FALLBACK;
			snprintf(fallback_why, sizeof(fallback_why),
				 "cannot mount the workspace on %s: %s", target, strerror(-rc));
		}
	}
	if (v == V_FALLBACK)
		log_warnx("workspace/ is served through FUSE: %s", fallback_why);
	else if (v == V_FUSE)
		log_info("workspace/ is served through FUSE ([workspace] mount = fuse)");
	if (v != V_KERNEL && want_nofollow && !links_why[0])
		bound = bind_nofollow(target) == 0;
	if (want_nofollow && v != V_KERNEL && !bound)
		log_warnx("workspace/ follows the sandbox's symlinks on the host: %s", links_why);
	pthread_mutex_lock(&lock);
	shown = v;
	pthread_mutex_unlock(&lock);
	atomic_store(&hold_links, want_nofollow && v == V_KERNEL);
}

struct attach {
	char *target;
	void (*settled)(void);
};

static void *attach_thread(void *arg)
{
	struct attach *a = arg;

	settle(a->target);
	a->settled();
	free(a->target);
	free(a);
	return NULL;
}

void ws_view_attach(const char *mountpoint, void (*settled)(void))
{
	struct attach *a = xmalloc(sizeof(*a));
	char *target = xasprintf("%s/workspace", mountpoint);
	pthread_t t;
	int rc;

	/* The mounts need target's lookup answered: they run while the session serves. */
	a->target = target;
	pthread_mutex_lock(&lock);
	view_path = xstrdup(target);
	pthread_mutex_unlock(&lock);
	a->settled = settled;
	if ((rc = pthread_create(&t, NULL, attach_thread, a)) == 0) {
		pthread_detach(t);
		return;
	}
	free(a);
	if (kernel_mfd >= 0)
		close(kernel_mfd);
	kernel_mfd = -1;
	planned = V_FALLBACK;
	snprintf(fallback_why, sizeof(fallback_why), "no thread to mount it: %s", strerror(rc));
	snprintf(links_why, sizeof(links_why), "no thread to mount it: %s", strerror(rc));
	settle(target);
	free(target);
	settled();
}

char *ws_view_describe(void)
{
	static const char *const names[] = {
	    [V_STARTING] = "starting",
	    [V_KERNEL] = "kernel",
	    [V_FUSE] = "fuse",
	    [V_FALLBACK] = "fuse-fallback",
	};
	struct mount_top top = {0};
	enum view v;
	char *text;

	pthread_mutex_lock(&lock);
	v = shown;
	if (v != V_STARTING)
		mounttab_top(view_path, &top);
	if (v == V_KERNEL && (!top.found || !strcmp(top.fstype, "fuse.sbxfs")))
		text = xasprintf("workspace detached: nothing is mounted on workspace/ (its FUSE view "
				 "%s)\n",
				 want_nofollow ? "refuses to read links" : "is served");
	else
		text = xasprintf("workspace %s%s%s\n", names[v], v == V_FALLBACK ? " " : "",
				 v == V_FALLBACK ? fallback_why : "");
	pthread_mutex_unlock(&lock);
	return text;
}

bool ws_view_follows(char *why, size_t whylen)
{
	struct mount_top top = {0};
	bool follows;

	*why = '\0';
	if (!want_nofollow)
		return true;
	if (atomic_load(&hold_links))
		return false;
	pthread_mutex_lock(&lock);
	if (shown == V_STARTING) {
		pthread_mutex_unlock(&lock);
		snprintf(why, whylen, "%s", links_why);
		return true;
	}
	mounttab_top(view_path, &top);
	follows = !top.found || !top.nosymfollow;
	if (follows)
		snprintf(why, whylen, "%s",
			 links_why[0] ? links_why : "no nosymfollow mount covers workspace/ any more");
	pthread_mutex_unlock(&lock);
	return follows;
}

bool ws_view_hold_links(void)
{
	return atomic_load(&hold_links);
}
