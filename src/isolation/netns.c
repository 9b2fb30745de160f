/* The sandbox's network namespace (see netns.h). Namespaces belong to threads: each step runs
 * on a short-lived thread that enters the namespace (or makes it), does its work and ends, so
 * no other thread of the daemon ever leaves the host's network. */
#include "netns.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static int ns_fd = -1;

struct job {
	int (*fn)(struct job *j);
	uint16_t port;
	int rc;
};

static void *run(void *arg)
{
	struct job *j = arg;

	j->rc = j->fn(j);
	return NULL;
}

static int on_thread(struct job *j)
{
	pthread_t t;
	int rc = pthread_create(&t, NULL, run, j);

	if (rc)
		return -rc;
	pthread_join(t, NULL);
	return j->rc;
}

static int make(struct job *j)
{
	struct ifreq ifr = {0};
	int s, fd;

	(void)j;
	if (unshare(CLONE_NEWNET) < 0)
		return -errno;
	fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	strcpy(ifr.ifr_name, "lo");
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0 ||
	    (ifr.ifr_flags |= IFF_UP, ioctl(s, SIOCSIFFLAGS, &ifr) < 0)) {
		int rc = -errno;

		if (s >= 0)
			close(s);
		close(fd);
		return rc;
	}
	close(s);
	return fd;
}

int netns_create(void)
{
	struct job j = {.fn = make};
	int fd = on_thread(&j);

	if (fd < 0)
		return fd;
	ns_fd = fd;
	return 0;
}

int netns_fd(void)
{
	return ns_fd;
}

static int listen_in(struct job *j)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(j->port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sin);
	int fd, one = 1;

	if (setns(ns_fd, CLONE_NEWNET) < 0)
		return -errno;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 1024) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	j->port = ntohs(sin.sin_port);
	return fd;
}

int netns_listen(uint16_t port, uint16_t *bound)
{
	struct job j = {.fn = listen_in, .port = port};
	int fd;

	if (ns_fd < 0)
		return -ENOENT;
	fd = on_thread(&j);
	if (fd >= 0)
		*bound = j.port;
	return fd;
}

void netns_close(void)
{
	if (ns_fd >= 0)
		close(ns_fd);
	ns_fd = -1;
}
