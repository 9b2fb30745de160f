/* The sandbox's network namespace, for exposed ports (see launch.h): held as a descriptor from
 * the launcher's hello to its death. bwrap's init holds it: with --unshare-pid the bwrap we
 * forked has one child, that init, and the launcher is the init's child. The sandbox cannot
 * change which namespace that is (its filter refuses setns and unshare), nor become a child of
 * our bwrap, so the children file names the init and nothing the sandbox chose. */
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch_priv.h"
#include "log.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int netns_fd = -1;   /* lock */
static unsigned generation; /* lock: changes whenever netns_fd does */

/* The only child of bwrap: its init, or -ESRCH. */
static pid_t bwrap_init(pid_t bwrap)
{
	char path[64];
	long pid = -ESRCH;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)bwrap, (int)bwrap);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = -ESRCH;
	fclose(f);
	return (pid_t)pid;
}

/* The parent of the process /proc/PID names (its dirfd), or -errno once it is gone. */
static pid_t parent_of(int dirfd)
{
	char buf[512], *paren;
	int fd = openat(dirfd, "stat", O_RDONLY | O_CLOEXEC), ppid;
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	/* "pid (comm) state ppid ...": comm may hold anything, the last ')' ends it */
	paren = strrchr(buf, ')');
	if (!paren || sscanf(paren + 1, " %*c %d", &ppid) != 1)
		return -ESRCH;
	return ppid;
}

/* A descriptor of the init's network namespace, checked to still be bwrap's child once open
 * (so a pid reused in between cannot be taken for it), or -errno. */
static int open_netns(pid_t bwrap)
{
	pid_t init = bwrap_init(bwrap);
	char path[64];
	int dirfd, fd;

	if (init < 0)
		return init;
	snprintf(path, sizeof(path), "/proc/%d", (int)init);
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	fd = openat(dirfd, "ns/net", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fd = -errno;
	} else if (parent_of(dirfd) != bwrap) {
		close(fd);
		fd = -ESRCH;
	}
	close(dirfd);
	return fd;
}

static bool is_own_netns(int fd)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && stat("/proc/self/ns/net", &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

void launch_netns_open(pid_t bwrap)
{
	int fd = open_netns(bwrap);

	if (fd >= 0 && is_own_netns(fd)) { /* network = host */
		close(fd);
		fd = -ENOENT;
	} else if (fd < 0) {
		log_warnx("the sandbox's network namespace: %s; exposed ports refuse connections",
			  strerror(-fd));
	}
	pthread_mutex_lock(&lock);
	if (netns_fd >= 0)
		close(netns_fd);
	netns_fd = fd < 0 ? -1 : fd;
	generation++;
	pthread_mutex_unlock(&lock);
}

void launch_netns_close(void)
{
	pthread_mutex_lock(&lock);
	if (netns_fd >= 0) {
		close(netns_fd);
		netns_fd = -1;
		generation++;
	}
	pthread_mutex_unlock(&lock);
}

int launch_netns(unsigned *gen)
{
	int fd;

	pthread_mutex_lock(&lock);
	fd = netns_fd < 0 ? -ENOENT : fcntl(netns_fd, F_DUPFD_CLOEXEC, 0);
	if (fd == -1)
		fd = -errno;
	*gen = generation;
	pthread_mutex_unlock(&lock);
	return fd;
}

unsigned launch_netns_gen(void)
{
	unsigned gen;

	pthread_mutex_lock(&lock);
	gen = generation;
	pthread_mutex_unlock(&lock);
	return gen;
}
