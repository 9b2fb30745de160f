/* The mounts on MOUNT/workspace (see ws_mount.h): the swap's user namespace, the detached mount
 * of the backing directory with its attributes, the nosymfollow bind of the FUSE workspace,
 * attaching either over the FUSE mount's workspace entry, and detaching it. */
#include "ws_mount.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "xmalloc.h"

/* The attached mount: kept open so it can be unmounted through /proc/self/fd, never by a path
 * the FUSE session would have to resolve. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int attached_fd = -1;

#define ID_LIMIT 4294967295u /* (uid_t)-1 is no id: maps cover 0 .. ID_LIMIT - 1 */

/* A map that swaps a and b and maps every other id to itself. */
static int write_swap_map(pid_t pid, const char *file, unsigned a, unsigned b)
{
	unsigned lo = a < b ? a : b, hi = a < b ? b : a;
	char path[64], map[256];
	int fd, len = 0, rc = 0;

	if (lo > 0)
		len += snprintf(map + len, sizeof(map) - len, "0 0 %u\n", lo);
	len += snprintf(map + len, sizeof(map) - len, "%u %u 1\n%u %u 1\n", lo, hi, hi, lo);
	if (hi - lo > 1)
		len += snprintf(map + len, sizeof(map) - len, "%u %u %u\n", lo + 1, lo + 1,
				hi - lo - 1);
	if (hi < ID_LIMIT - 1)
		len += snprintf(map + len, sizeof(map) - len, "%u %u %u\n", hi + 1, hi + 1,
				ID_LIMIT - hi - 1);
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		return -errno;
	if (write(fd, map, len) != len)
		rc = -errno;
	close(fd);
	return rc;
}

/* A user namespace whose maps swap the owner's and the sandbox user's ids: a child unshares
 * it and waits while the daemon writes the maps and opens it. Returns its fd or -errno. */
static int swap_userns(const struct ws_mount_spec *s)
{
	int ready[2], hold[2], fd = -1, rc;
	char c, path[64];
	pid_t pid;

	if (pipe2(ready, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(hold, O_CLOEXEC) < 0) {
		rc = -errno;
		close(ready[0]);
		close(ready[1]);
		return rc;
	}
	pid = fork();
	if (pid == 0) {
		close(ready[0]);
		close(hold[1]);
		c = unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
		if (write(ready[1], &c, 1) == 1)
			while (read(hold[0], &c, 1) < 0 && errno == EINTR)
				;
		_exit(0);
	}
	rc = pid < 0 ? -errno : 0;
	close(ready[1]);
	close(hold[0]);
	if (rc == 0 && (read(ready[0], &c, 1) != 1 || c != 'y'))
		rc = -EPERM;
	if (rc == 0)
		rc = write_swap_map(pid, "uid_map", s->owner_uid, s->sandbox_uid);
	if (rc == 0)
		rc = write_swap_map(pid, "gid_map", s->owner_gid, s->sandbox_gid);
	if (rc == 0) {
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			rc = -errno;
	}
	close(hold[1]);
	close(ready[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return rc < 0 ? rc : fd;
}

int ws_mount_prepare(const struct ws_mount_spec *s, char *why, size_t whylen)
{
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
	bool idmap = s->idmap && (s->owner_uid != s->sandbox_uid || s->owner_gid != s->sandbox_gid);
	int mfd, nsfd = -1, rc = 0;

	if (!s->symfollow)
		attr.attr_set |= MOUNT_ATTR_NOSYMFOLLOW;
	if (idmap && (nsfd = swap_userns(s)) < 0) {
		snprintf(why, whylen, "cannot make the id swap's user namespace: %s",
			 strerror(-nsfd));
		return nsfd;
	}
	mfd = open_tree(AT_FDCWD, s->backing, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (mfd < 0) {
		rc = -errno;
		snprintf(why, whylen, "cannot clone the mount of %s: %s", s->backing,
			 strerror(-rc));
	}
	if (rc == 0 && idmap) {
		attr.attr_set |= MOUNT_ATTR_IDMAP;
		attr.userns_fd = nsfd;
	}
	if (rc == 0 && mount_setattr(mfd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr))) {
		rc = -errno;
		if (idmap && rc == -EINVAL)
			snprintf(why, whylen, "the filesystem of %s cannot be idmapped",
				 s->backing);
		else
			snprintf(why, whylen, "cannot set the mount attributes of %s: %s",
				 s->backing, strerror(-rc));
		close(mfd);
	}
	if (nsfd >= 0)
		close(nsfd);
	return rc < 0 ? rc : mfd;
}

int ws_mount_prepare_nofollow(const char *target, char *why, size_t whylen)
{
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
					      MOUNT_ATTR_NOSYMFOLLOW};
	int mfd = open_tree(AT_FDCWD, target, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC), rc;

	if (mfd < 0) {
		rc = -errno;
		snprintf(why, whylen, "cannot clone %s: %s", target, strerror(-rc));
		return rc;
	}
	if (mount_setattr(mfd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0) {
		rc = -errno;
		snprintf(why, whylen, "cannot make %s nosymfollow: %s", target, strerror(-rc));
		close(mfd);
		return rc;
	}
	return mfd;
}

int ws_mount_attach(int mfd, const char *target, bool keep)
{
	int rc = 0;

	if (move_mount(mfd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0) {
		rc = -errno;
		close(mfd);
		return rc;
	}
	if (!keep) {
		close(mfd);
		return 0;
	}
	pthread_mutex_lock(&lock);
	attached_fd = mfd;
	pthread_mutex_unlock(&lock);
	return 0;
}

void ws_mount_detach(void)
{
	char path[64];

	pthread_mutex_lock(&lock);
	if (attached_fd >= 0) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", attached_fd);
		/* EINVAL: somebody unmounted it already (umount -l, the watchdog). */
		if (umount2(path, MNT_DETACH) < 0 && errno != EINVAL)
			log_warn("unmount the workspace");
		close(attached_fd);
		attached_fd = -1;
	}
	pthread_mutex_unlock(&lock);
}
