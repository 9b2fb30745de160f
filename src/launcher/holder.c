/* The stdin holder (see holder.h). It holds nothing of the launcher's: no daemon socket, no
 * stderr, only its own socket and the pipes. Each request is a struct holder_req on a stream
 * socket; HOLD carries the pipe with SCM_RIGHTS and is acked with one byte (1: held, 0: not),
 * so the launcher reports HELD only once the path can be opened. The launcher picks the fd
 * numbers, so a holder taken over by a command can lie about nothing but its acks. */
#include "holder.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

enum { HOLDER_HOLD = 1, HOLDER_DROP = 2 };

struct holder_req {
	int32_t op;
	int32_t fdnum;
};

static int recv_req(int sock, struct holder_req *req, int *fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {req, sizeof(*req)};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *c;
	ssize_t n;

	*fd = -1;
	do
		n = recvmsg(sock, &mh, MSG_WAITALL);
	while (n < 0 && errno == EINTR);
	c = CMSG_FIRSTHDR(&mh);
	if (n > 0 && c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
	    c->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(fd, CMSG_DATA(c), sizeof(int));
	return n == (ssize_t)sizeof(*req) ? 0 : -1;
}

static void __attribute__((noreturn)) holder_main(int sock)
{
	struct holder_req req;
	int fd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_DUMPABLE, 1);
	if (dup2(sock, 0) < 0)
		_exit(1);
	close_range(1, ~0U, 0);
	while (recv_req(0, &req, &fd) == 0) {
		char ack = 0;

		if (req.op == HOLDER_DROP) {
			close(req.fdnum);
			continue;
		}
		if (fd >= 0 && (fd == req.fdnum || dup2(fd, req.fdnum) == req.fdnum))
			ack = 1;
		if (fd >= 0 && fd != req.fdnum)
			close(fd);
		if (write(0, &ack, 1) != 1)
			break;
	}
	_exit(0);
}

int holder_start(pid_t *pid)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	*pid = fork();
	if (*pid == 0) {
		close(sv[0]);
		holder_main(sv[1]);
	}
	close(sv[1]);
	if (*pid < 0) {
		close(sv[0]);
		return -errno;
	}
	return sv[0];
}

static int send_req(int sock, int op, int fdnum, int fd)
{
	struct holder_req req = {op, fdnum};
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {&req, sizeof(req)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	/* Never blocks: a holder that stops reading fails holds, it does not stall the launcher. */
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(req) ? 0 : -EPIPE;
}

int holder_hold(int sock, int fd, int fdnum)
{
	return send_req(sock, HOLDER_HOLD, fdnum, fd);
}

int holder_drop(int sock, int fdnum)
{
	return send_req(sock, HOLDER_DROP, fdnum, -1);
}
