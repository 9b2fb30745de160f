/* `sbxfs -u MOUNTPOINT`: unmounts, then waits for the daemon that served the mount to exit, so
 * that what follows (a mount on the same state dir, systemd's SIGTERM to what is left of the
 * unit) meets a daemon that is gone, not one still stopping. The daemon is found by the FUSE
 * connection its /dev/fuse descriptors serve (fdinfo's fuse_connection, Linux 6.16 and later),
 * so nothing but the mount point is needed; on older kernels -u returns once unmounted. */
#include "unmount.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "ws_mount.h"
#include "xmalloc.h"

extern char **environ;

/* How long the daemon may take to stop (ending every session, the launcher's own bounded wait,
 * freeze-kill rounds) before -u gives up on it; systemd's unit allows 30 s for the whole stop. */
#define STOP_WAIT_MS 25000
/* Past this, say what -u is waiting for, so a slow stop does not look like a hang. */
#define STOP_NOTE_MS 3000
#define MAX_SERVERS  8

/* Undoes mountinfo's octal escapes (\040 for a space, \011, \012, \134) in place. */
static void unescape(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

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

/* The device of the topmost sbxfs mount at path, as the kernel numbers FUSE connections
 * (MAJOR << 20 | MINOR); 0 if none is mounted there. */
static unsigned long sbxfs_connection(const char *path)
{
	char *line = NULL, point[PATH_MAX + 1], fstype[64];
	unsigned maj, min;
	unsigned long conn = 0;
	size_t cap = 0;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return 0;
	while (getline(&line, &cap, f) > 0) {
		/* id parent MAJ:MIN root mountpoint options [optional fields] - fstype ... */
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*s %*s %u:%u %*s %4096s", &maj, &min, point) != 3 ||
		    sscanf(sep + 3, "%63s", fstype) != 1)
			continue;
		unescape(point);
		if (strcmp(point, path) == 0)
			conn =
			    strcmp(fstype, "fuse.sbxfs") == 0 ? (unsigned long)maj << 20 | min : 0;
	}
	free(line);
	fclose(f);
	return conn;
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

void unmount_main(const char *mountpoint)
{
	int pidfds[MAX_SERVERS], n = 0, rc;
	char *path = mount_path(mountpoint);
	unsigned long conn = path ? sbxfs_connection(path) : 0;

	free(path);
	if (conn)
		n = find_servers(conn, pidfds, MAX_SERVERS);
	/* The workspace mounted on the mount goes first, or the FUSE unmount meets EBUSY. */
	rc = ws_mount_unmount_at(mountpoint);
	if (rc < 0 && rc != -EPERM) /* EPERM: not root, so there is no kernel mount to undo */
		log_warnx("unmount %s/workspace: %s", mountpoint, strerror(-rc));
	if ((rc = fusermount_unmount(mountpoint)) != 0)
		exit(rc);
	if (!wait_exited(pidfds, n, mountpoint))
		fatalx("%s is unmounted, but its daemon did not stop within %d s (see its log)",
		       mountpoint, STOP_WAIT_MS / 1000);
	exit(0);
}
