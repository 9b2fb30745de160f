/* One relayed connection (see expose_conn.h): its socket into the sandbox, made in the sandbox's
 * network namespace, and the bytes moved both ways with splice(2) through a pipe per direction,
 * so they never cross into the daemon's memory. Both sockets are registered edge-triggered for
 * reads and writes; after any event both directions are pumped until they would block, so no
 * edge is lost. A direction that reads EOF and has emptied its pipe shuts the other socket's
 * writing side (a half-close passes through); once both have, the connection closes. Any error
 * closes it, resetting the host's side so its client sees that something went wrong. */
#include "expose_conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "launch.h"
#include "log.h"
#include "xmalloc.h"

/* Bytes a connection may move in one go before the others get their turn. */
#define SHARE	   (1u << 20)
#define PIPE_BYTES (1u << 16)

enum { HOST, SANDBOX };

enum conn_state { CONNECTING4, CONNECTING6, OPEN };

struct conn {
	struct relay_listener *l;
	enum conn_state state;
	int fd[2];	       /* HOST, SANDBOX */
	int pipe[2][2];	       /* pipe[d] carries what fd[d] reads to fd[!d] */
	size_t queued[2];      /* bytes in pipe[d] */
	bool eof[2];	       /* fd[d] read its end */
	bool shut[2];	       /* fd[!d] got shutdown(SHUT_WR) once pipe[d] was empty */
	bool closed;	       /* fds gone; freed by conn_reap */
	bool busy;	       /* in the busy list */
	struct tag tag[2];     /* TAG_HOST, TAG_SANDBOX */
	LIST_ENTRY(conn) link; /* the listener's */
	TAILQ_ENTRY(conn) busy_link;
	TAILQ_ENTRY(conn) dead_link;
};

static TAILQ_HEAD(conn_list, conn) busy = TAILQ_HEAD_INITIALIZER(busy);
static TAILQ_HEAD(, conn) dead = TAILQ_HEAD_INITIALIZER(dead);
static unsigned active;	   /* open connections, all listeners */
static unsigned netns_gen; /* the namespace this thread is in, as launch_netns named it */
static bool in_sandbox;
static unsigned warned_gen = ~0u; /* a failed setns is logged once per namespace */

/* Closing without lingering sends a reset rather than an orderly end. */
static void close_reset(int fd)
{
	struct linger lg = {.l_onoff = 1, .l_linger = 0};

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

/* A socket in the sandbox's network namespace: this thread enters the namespace (again after a
 * launcher restart made a new one); the socket stays in it whatever the thread does later. */
static int sandbox_socket(int family)
{
	unsigned gen = launch_netns_gen();
	int fd;

	if (!in_sandbox || gen != netns_gen) {
		int ns = launch_netns(&gen), rc;

		if (ns < 0)
			return ns;
		rc = setns(ns, CLONE_NEWNET) < 0 ? -errno : 0;
		close(ns);
		if (rc < 0) {
			if (warned_gen != gen)
				log_warnx("exposed ports: cannot enter the sandbox's network "
					  "namespace: %s",
					  strerror(-rc));
			warned_gen = gen;
			return rc;
		}
		netns_gen = gen;
		in_sandbox = true;
	}
	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	return fd < 0 ? -errno : fd;
}

static int watch(struct conn *c, int side)
{
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
				 .data.ptr = &c->tag[side]};

	return epoll_ctl(relay_epfd, EPOLL_CTL_ADD, c->fd[side], &ev) < 0 ? -errno : 0;
}

/* Starts the connection to the sandbox's loopback (IPv4, else IPv6): 0 once under way or
 * made, or -errno (ECONNREFUSED: nothing listens there). */
static int connect_inside(struct conn *c, int family)
{
	struct sockaddr_in in = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)c->l->port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_in6 in6 = {.sin6_family = AF_INET6,
				   .sin6_port = htons((uint16_t)c->l->port),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	int fd = sandbox_socket(family), rc;

	if (fd < 0)
		return fd;
	if (c->fd[SANDBOX] >= 0)
		close(c->fd[SANDBOX]);
	c->fd[SANDBOX] = fd;
	c->state = family == AF_INET ? CONNECTING4 : CONNECTING6;
	rc = family == AF_INET ? connect(fd, (struct sockaddr *)&in, sizeof(in))
			       : connect(fd, (struct sockaddr *)&in6, sizeof(in6));
	if (rc == 0)
		c->state = OPEN;
	else if (errno != EINPROGRESS)
		return -errno;
	return watch(c, SANDBOX);
}

/* The IPv4 attempt was refused: a server may listen on [::1] only. */
static int connect_next(struct conn *c, int err)
{
	if (err == ECONNREFUSED && c->state == CONNECTING4)
		return connect_inside(c, AF_INET6);
	return -err;
}

static void unbusy(struct conn *c)
{
	if (c->busy) {
		TAILQ_REMOVE(&busy, c, busy_link);
		c->busy = false;
	}
}

static void conn_close(struct conn *c, bool reset)
{
	if (c->closed)
		return;
	unbusy(c);
	for (int d = 0; d < 2; d++) {
		if (c->fd[d] >= 0 && reset && d == HOST)
			close_reset(c->fd[d]);
		else if (c->fd[d] >= 0)
			close(c->fd[d]);
		for (int e = 0; e < 2; e++)
			if (c->pipe[d][e] >= 0)
				close(c->pipe[d][e]);
	}
	c->closed = true;
	LIST_REMOVE(c, link);
	atomic_fetch_sub(&c->l->st->active, 1);
	active--;
	TAILQ_INSERT_TAIL(&dead, c, dead_link);
}

void conn_reset(struct conn *c)
{
	conn_close(c, true);
}

/* Refused before it was relayed: counted, and the host's side reset. */
static void refuse(struct relay_listener *l, int host_fd)
{
	atomic_fetch_add(&l->st->refused, 1);
	close_reset(host_fd);
}

/* Nothing listens inside, or the namespace is gone: refused after all. */
static void fail(struct conn *c)
{
	atomic_fetch_add(&c->l->st->refused, 1);
	conn_close(c, true);
}

static void pump(struct conn *c);

/* Connected inside: relayed from now on. */
static void opened(struct conn *c)
{
	c->state = OPEN;
	atomic_fetch_add(&c->l->st->accepted, 1);
	pump(c);
}

static struct conn *conn_new(struct relay_listener *l, int host_fd)
{
	struct conn *c = xcalloc(1, sizeof(*c));

	c->l = l;
	c->fd[HOST] = host_fd;
	c->fd[SANDBOX] = -1;
	for (int d = 0; d < 2; d++) {
		c->tag[d] = (struct tag){d == HOST ? TAG_HOST : TAG_SANDBOX, c};
		if (pipe2(c->pipe[d], O_NONBLOCK | O_CLOEXEC) < 0)
			c->pipe[d][0] = c->pipe[d][1] = -1;
	}
	LIST_INSERT_HEAD(&l->conns, c, link);
	atomic_fetch_add(&l->st->active, 1);
	active++;
	return c;
}

/* One step of direction d: into its pipe what fd[d] has and the pipe takes, then out of the
 * pipe what fd[!d] takes; at EOF with the pipe empty, the half-close. 1 if anything moved, 0
 * if both would block, -errno. *share shrinks by what was read. */
static int move(struct conn *c, int d, size_t *share)
{
	ssize_t n;
	int moved = 0;

	if (!c->eof[d] && c->queued[d] < PIPE_BYTES) {
		n = splice(c->fd[d], NULL, c->pipe[d][1], NULL, PIPE_BYTES - c->queued[d],
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			c->queued[d] += (size_t)n;
			*share = *share > (size_t)n ? *share - (size_t)n : 0;
			moved = 1;
		} else if (n == 0) {
			c->eof[d] = true;
			moved = 1;
		} else if (errno != EAGAIN) {
			return -errno;
		}
	}
	if (c->queued[d]) {
		n = splice(c->pipe[d][0], NULL, c->fd[!d], NULL, c->queued[d],
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			c->queued[d] -= (size_t)n;
			moved = 1;
		} else if (n < 0 && errno != EAGAIN) {
			return -errno;
		}
	}
	if (c->eof[d] && !c->queued[d] && !c->shut[d]) {
		shutdown(c->fd[!d], SHUT_WR);
		c->shut[d] = true;
	}
	return moved;
}

/* Moves bytes both ways until both would block, the connection ends, or its share is spent
 * (then it waits in the busy list for its next turn). */
static void pump(struct conn *c)
{
	size_t share = SHARE;
	int a, b;

	if (c->state != OPEN)
		return;
	do {
		a = move(c, HOST, &share);
		b = move(c, SANDBOX, &share);
		if (a < 0 || b < 0) {
			conn_close(c, true);
			return;
		}
		if (c->shut[HOST] && c->shut[SANDBOX]) {
			conn_close(c, false);
			return;
		}
	} while ((a || b) && share);
	if ((a || b) && !c->busy) {
		TAILQ_INSERT_TAIL(&busy, c, busy_link);
		c->busy = true;
	} else if (!(a || b)) {
		unbusy(c);
	}
}

void conn_open(struct relay_listener *l, int host_fd, unsigned max_conns)
{
	struct conn *c;
	int rc;

	if (active >= max_conns) {
		refuse(l, host_fd);
		return;
	}
	c = conn_new(l, host_fd);
	rc = c->pipe[0][0] < 0 || c->pipe[1][0] < 0 ? -EMFILE : watch(c, HOST);
	if (rc == 0 && (rc = connect_inside(c, AF_INET)) < 0)
		rc = connect_next(c, -rc); /* a refusal can come before connect() returns */
	if (rc < 0) {
		fail(c);
		return;
	}
	if (c->state == OPEN)
		opened(c);
}

/* The sandbox's side finished connecting, failed to, or is still at it (an event in hand for
 * the socket of a refused attempt names the next one). */
static void connected(struct conn *c)
{
	struct sockaddr_storage peer;
	socklen_t len = sizeof(int), plen = sizeof(peer);
	int err = 0;

	if (getsockopt(c->fd[SANDBOX], SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err == 0) {
		if (getpeername(c->fd[SANDBOX], (struct sockaddr *)&peer, &plen) == 0)
			opened(c);
		return;
	}
	if (connect_next(c, err) < 0)
		fail(c);
	else if (c->state == OPEN)
		opened(c);
}

void conn_event(struct conn *c, enum tag_kind side)
{
	if (c->closed)
		return;
	if (c->state != OPEN) {
		if (side == TAG_SANDBOX)
			connected(c);
		return;
	}
	pump(c);
}

bool conn_any_busy(void)
{
	return !TAILQ_EMPTY(&busy);
}

void conn_run_busy(void)
{
	struct conn *last = TAILQ_LAST(&busy, conn_list), *c;

	/* Each once, in order; a connection that is still busy goes to the back. */
	while ((c = TAILQ_FIRST(&busy))) {
		bool end = c == last;

		unbusy(c);
		pump(c);
		if (end)
			break;
	}
}

void conn_reap(void)
{
	struct conn *c;

	while ((c = TAILQ_FIRST(&dead))) {
		TAILQ_REMOVE(&dead, c, dead_link);
		free(c);
	}
}
