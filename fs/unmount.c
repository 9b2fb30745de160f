/* `sbxfs -u MOUNTPOINT`: unmounts as a transaction, then waits for the daemon that served the
 * mount to exit, so that what follows (a mount on the same state dir, systemd's SIGTERM to what
 * is left of the unit) meets a daemon that is gone, not one still stopping.
 * A busy mount (holders.h) is refused before anything changes, with what holds it. Otherwise the
 * mounts on the mount (workspace/, the guard's covers) are detached, each kept as a clone, and
 * the mount unmounted; should that still fail (something got in meanwhile), the clones go back
 * where they were, so a refused unmount never leaves a tree that follows links. -z (--lazy)
 * stops the daemon instead, which detaches it all lazily and ends the connection: what held it
 * gets ENOTCONN, and the detached covers keep their nosymfollow.
 * The daemon is found by the FUSE connection its /dev/fuse descriptors serve (fdinfo's
 * fuse_connection, Linux 6.16 and later), so nothing but the mount point is needed; on older
 * kernels -u returns once unmounted. */
#include "unmount.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "holders.h"
#include "log.h"
#include "mounttab.h"
#include "xmalloc.h"

extern char **environ;

/* How long the daemon may take to stop (ending every session, the launcher's own bounded wait,
 * freeze-kill rounds) before -u gives up on it; systemd's unit allows 30 s for the whole stop. */
#define STOP_WAIT_MS 25000
/* Past this, say what -u is waiting for, so a slow stop does not look like a hang. */
#define STOP_NOTE_MS 3000
#define MAX_SERVERS  8

/* The absolute path of the mount point, found without entering the mount: its parent resolved,
 * its own name appended, as fusermount3 does. NULL if the parent cannot be resolved. */
static char *mount_path(const char *mountpoint)
{
	char *copy = xstrdup(mountpoint), *slash, *parent, *name, *path = NULL;
	size_t len = strlen(copy);

	while (len > 1 && copy[len - 1] == '/')
		copy[--len] = '\0';
	slash = strrchr(copy, '/');
	if (!slash) {
		parent = realpath(".", NULL);
		name = copy;
	} else {
		*slash = '\0';
		parent = realpath(slash == copy ? "/" : copy, NULL);
		name = slash + 1;
	}
	if (parent)
		path = xasprintf("%s%s%s", parent, strcmp(parent, "/") ? "/" : "", name);
	free(parent);
	free(copy);
	return path;
}

/* The mount at path and every mount on it, with the FUSE connection of the sbxfs mount there
 * (MAJOR << 20 | MINOR, 0 if there is none) and the points of the mounts on it. */
struct tree_scan {
	const char *path;
	struct mount_tree tree;
	unsigned long conn;
	char *subs[MOUNT_TREE_MAX];
	int nsubs;
};

static int scan_mount(const struct mount_entry *m, void *arg)
{
	struct tree_scan *t = arg;

	if (!mounttab_under(m->point, t->path))
		return 0;
	mount_tree_add(&t->tree, m->id, m->major, m->minor);
	if (t->tree.overflow)
		return 0;
	if (strcmp(m->point, t->path) == 0)
		t->conn = strcmp(m->fstype, "fuse.sbxfs") == 0
			      ? (unsigned long)m->major << 20 | m->minor
			      : 0;
	else
		t->subs[t->nsubs++] = xstrdup(m->point);
	return 0;
}

static int deepest_first(const void *a, const void *b)
{
	return (int)strlen(*(char *const *)b) - (int)strlen(*(char *const *)a);
}

static void scan_tree(struct tree_scan *t, const char *path)
{
	memset(t, 0, sizeof(*t));
	t->path = path;
	mounttab_each(scan_mount, t);
	qsort(t->subs, (size_t)t->nsubs, sizeof(t->subs[0]), deepest_first);
}

static void free_tree(struct tree_scan *t)
{
	for (int i = 0; i < t->nsubs; i++)
		free(t->subs[i]);
}

/* Whether one of pid's descriptors is /dev/fuse serving connection conn. */
static bool serves(pid_t pid, unsigned long conn)
{
	char dir[64], target[16], line[128];
	struct dirent *de;
	bool found = false;
	int info;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fdinfo", (int)pid);
	if ((info = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return false;
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	if (!(d = opendir(dir))) {
		close(info);
		return false;
	}
	while (!found && (de = readdir(d))) {
		ssize_t n = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);
		int fd;
		FILE *f;

		if (n != 9 || memcmp(target, "/dev/fuse", 9) != 0)
			continue;
		if ((fd = openat(info, de->d_name, O_RDONLY | O_CLOEXEC)) < 0 ||
		    !(f = fdopen(fd, "r"))) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		while (!found && fgets(line, sizeof(line), f)) {
			unsigned long c;

			found = sscanf(line, "fuse_connection: %lu", &c) == 1 && c == conn;
		}
		fclose(f);
	}
	closedir(d);
	close(info);
	return found;
}

/* pidfds of the processes serving connection conn (the daemon), at most max; each checked
 * again once its pidfd is open, so a pid reused in between is not waited for. */
static int find_servers(unsigned long conn, int *pidfds, int max)
{
	struct dirent *de;
	DIR *d = opendir("/proc");
	pid_t self = getpid();
	int n = 0;

	while (d && n < max && (de = readdir(d))) {
		pid_t pid = (pid_t)strtol(de->d_name, NULL, 10);
		int fd;

		if (pid <= 0 || pid == self || !serves(pid, conn))
			continue;
		fd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (fd >= 0 && serves(pid, conn))
			pidfds[n++] = fd;
		else if (fd >= 0)
			close(fd);
	}
	if (d)
		closedir(d);
	return n;
}

/* Runs fusermount3 -u and returns its exit status (it prints its own errors). */
static int fusermount_unmount(const char *mountpoint)
{
	char *argv[] = {"fusermount3", "-u", (char *)mountpoint, NULL};
	int status;
	pid_t pid;
	int rc = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);

	if (rc != 0) {
		log_warnx("%s: %s", argv[0], strerror(rc));
		return 1;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* Waits for every pidfd to report its process's exit; false if some are left after ms. */
static bool wait_exited(int *pidfds, int n, const char *mountpoint)
{
	struct pollfd pfd[MAX_SERVERS];
	int left = n, waited = 0;
	bool noted = false;

	for (int i = 0; i < n; i++)
		pfd[i] = (struct pollfd){.fd = pidfds[i], .events = POLLIN};
	while (left > 0 && waited < STOP_WAIT_MS) {
		int slice = noted ? STOP_WAIT_MS - waited : STOP_NOTE_MS - waited;
		int rc = poll(pfd, (nfds_t)n, slice);

		if (rc < 0 && errno != EINTR)
			break;
		if (rc == 0) {
			waited += slice;
			if (!noted) {
				log_info("%s is unmounted; waiting for its daemon to stop",
					 mountpoint);
				noted = true;
			}
			continue;
		}
		for (int i = 0; i < n; i++)
			if (pfd[i].revents) {
				pfd[i].fd = -1; /* poll skips it from now on */
				left--;
			}
	}
	return left == 0;
}

/* Pids of the servers found, for holders_find to skip: the daemon holds its own mount. */
static int server_pids(int *pidfds, int n, pid_t *pids)
{
	for (int i = 0; i < n; i++) {
		char path[64], line[128];
		FILE *f;

		pids[i] = 0;
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfds[i]);
		if (!(f = fopen(path, "re")))
			continue;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "Pid: %d", &pids[i]) == 1)
				break;
		fclose(f);
	}
	return n;
}

/* Refuses a busy mount: exits 1 with what holds it. */
static void refuse_if_busy(const struct tree_scan *t, const char *mountpoint, const pid_t *skip,
			   int nskip, const char *done)
{
	char names[1024];
	int n = holders_find(&t->tree, nskip ? skip : NULL, nskip, names, sizeof(names));

	if (n == 0)
		return;
	log_warnx("%s is busy, %s: held by %s (close what they have open there, or stop their "
		  "working directory being there; or unmount lazily with sbxfs -u -z)",
		  mountpoint, done, names);
	exit(1);
}

/* Detaches the mounts on the mount, deepest first, keeping a clone of each in clones. */
static void detach_subs(const struct tree_scan *t, int *clones)
{
	for (int i = 0; i < t->nsubs; i++) {
		clones[i] = open_tree(AT_FDCWD, t->subs[i], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (umount2(t->subs[i], MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL)
			log_warn("unmount %s", t->subs[i]);
	}
}

/* Puts the clones back, shallowest first. */
static void restore_subs(const struct tree_scan *t, int *clones)
{
	for (int i = t->nsubs - 1; i >= 0; i--) {
		if (clones[i] < 0)
			continue;
		if (move_mount(clones[i], "", AT_FDCWD, t->subs[i], MOVE_MOUNT_F_EMPTY_PATH) < 0)
			log_warn("cannot mount %s back", t->subs[i]);
		close(clones[i]);
		clones[i] = -1;
	}
}

static void close_clones(const struct tree_scan *t, int *clones)
{
	for (int i = 0; i < t->nsubs; i++)
		if (clones[i] >= 0)
			close(clones[i]);
}

/* -z: the daemon stops, detaching what it mounted and then the mount, lazily. */
static int stop_servers(int *pidfds, int n, const char *mountpoint)
{
	if (n == 0) {
		log_warnx("%s: no daemon serving it was found to stop (this kernel does not tell "
			  "which process serves a FUSE connection)",
			  mountpoint);
		return 1;
	}
	for (int i = 0; i < n; i++)
		if (syscall(SYS_pidfd_send_signal, pidfds[i], SIGTERM, NULL, 0) < 0)
			log_warn("signal the daemon of %s", mountpoint);
	return 0;
}

void unmount_main(const char *mountpoint, bool lazy)
{
	int pidfds[MAX_SERVERS], clones[MOUNT_TREE_MAX], n = 0, rc;
	pid_t pids[MAX_SERVERS];
	char *path = mount_path(mountpoint);
	struct tree_scan t;

	scan_tree(&t, path ? path : mountpoint);
	if (t.conn)
		n = server_pids(pidfds, find_servers(t.conn, pidfds, MAX_SERVERS), pids);
	if (t.tree.overflow) {
		/* Its holders and covers could not all be seen: nothing is touched. */
		log_warnx("%s has more than %d mounts on it: nothing was unmounted (unmount those "
			  "the host made, or use sbxfs -u -z)",
			  mountpoint, MOUNT_TREE_MAX);
		rc = lazy ? stop_servers(pidfds, n, mountpoint) : 1;
	} else if (!t.conn) {
		/* No sbxfs mount there: nothing of what is mounted below is ours to touch, and
		 * fusermount3 says what it makes of the path. */
		rc = lazy ? stop_servers(pidfds, 0, mountpoint) : fusermount_unmount(mountpoint);
	} else if (lazy) {
		rc = stop_servers(pidfds, n, mountpoint);
	} else {
		refuse_if_busy(&t, mountpoint, pids, n, "nothing was unmounted");
		detach_subs(&t, clones);
		if ((rc = fusermount_unmount(mountpoint)) != 0 && t.nsubs > 0) {
			restore_subs(&t, clones);
			refuse_if_busy(&t, mountpoint, pids, n, "it is mounted as it was");
			log_warnx("%s: it is mounted as it was", mountpoint);
		}
		close_clones(&t, clones);
	}
	free_tree(&t);
	free(path);
	if (rc != 0)
		exit(rc);
	if (!wait_exited(pidfds, n, mountpoint))
		fatalx("%s is unmounted, but its daemon did not stop within %d s (see its log)",
		       mountpoint, STOP_WAIT_MS / 1000);
	exit(0);
}
