/* Sending and receiving the daemon <-> sbxfs-netproxy messages (see netmsg.h). */
#include "netmsg.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int netmsg_send(int sock, const struct netmsg *m, int fd, bool wait)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = (void *)m, .iov_len = sizeof(*m)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *c;

	if (fd >= 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	if (sendmsg(sock, &mh, MSG_NOSIGNAL | (wait ? 0 : MSG_DONTWAIT)) < 0)
		return -errno;
	return 0;
}

int netmsg_recv(int sock, struct netmsg *m, int *fd)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = m, .iov_len = sizeof(*m)};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);

	*fd = -1;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? -EAGAIN : -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t nfd;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nfd; i++) {
			int f;

			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*fd < 0)
				*fd = f;
			else
				close(f);
		}
	}
	if (n == 0)
		return 0;
	if ((size_t)n != sizeof(*m) || (mh.msg_flags & MSG_TRUNC) || m->type < NETMSG_LISTEN ||
	    m->type > NETMSG_CONN) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return -EBADMSG;
	}
	return 1;
}

static bool terminated(const char *s, size_t cap)
{
	return memchr(s, '\0', cap) != NULL;
}

bool netmsg_conn_ok(const struct netmsg_conn *c)
{
	return terminated(c->host, sizeof(c->host)) && terminated(c->addr, sizeof(c->addr)) &&
	       terminated(c->rule, sizeof(c->rule));
}
