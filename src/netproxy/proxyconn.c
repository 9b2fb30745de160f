/* One client connection of sbxfs-netproxy, on a thread of its own: the first byte says SOCKS5
 * (5) or HTTP; the request names a host and port; the policy decides; the name is resolved here,
 * on the host, and every address is checked before it is connected to (so a name that resolves
 * to loopback or a private range is refused without a connection, and DNS rebinding cannot
 * move the check); then bytes are relayed both ways without being looked at (CONNECT and SOCKS
 * are tunnels, a plain HTTP request's body is streamed). The connection's record goes to the
 * daemon when it ends.
 * Before the policy, the credential: a request is a session's by the secret of its proxy
 * address (Proxy-Authorization, or SOCKS5's username and password), refused without it (407,
 * or SOCKS5's failure). Until then a connection is nobody's, held in a bounded queue whose
 * oldest is dropped for a newer one, so idle connections from one session to another's port
 * can neither fill nor starve that session's share. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "addrclass.h"
#include "elapsed.h"
#include "proxy_priv.h"
#include "proxyreq.h"
#include "xmalloc.h"

/* How long a client may take to send its request, and a server to accept. */
#define HANDSHAKE_S 30
/* Connections not yet any session's (no credential read): past this many, the oldest goes. */
#define PENDING_MAX 128
/* Each direction's pipe: what one splice may move. */
#define PIPE_BYTES (1u << 20)
#define STACK_SIZE (256u << 10)

struct conn {
	int fd, up;
	struct listener *l;	/* the one it came in on */
	struct listener *owner; /* its session's, once its credential is read */
	bool pending;		/* in the queue of connections that are nobody's yet */
	bool dropped;		/* shut down for a newer one (pending_lock) */
	TAILQ_ENTRY(conn) link;
	struct timespec t0;
	char buf[HTTP_HEAD_MAX + 1];
	size_t len;
	struct netmsg m; /* the record: host, port, verdict, rule, bytes */
};

static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static TAILQ_HEAD(, conn) pending = TAILQ_HEAD_INITIALIZER(pending);
static unsigned npending;

/* Queues c as nobody's yet; past PENDING_MAX, the oldest queued is shut down (its thread then
 * reads EOF and ends, logged as a connection that sent no request). */
static void pending_add(struct conn *c)
{
	pthread_mutex_lock(&pending_lock);
	TAILQ_INSERT_TAIL(&pending, c, link);
	c->pending = true;
	if (++npending > PENDING_MAX) {
		struct conn *old = TAILQ_FIRST(&pending);

		TAILQ_REMOVE(&pending, old, link);
		old->pending = false;
		old->dropped = true;
		npending--;
		shutdown(old->fd, SHUT_RDWR);
	}
	pthread_mutex_unlock(&pending_lock);
}

/* Takes c out of the queue; true if it had been dropped from it for a newer one. */
static bool pending_remove(struct conn *c)
{
	bool dropped;

	pthread_mutex_lock(&pending_lock);
	if (c->pending) {
		TAILQ_REMOVE(&pending, c, link);
		c->pending = false;
		npending--;
	}
	dropped = c->dropped;
	pthread_mutex_unlock(&pending_lock);
	return dropped;
}

static uint64_t ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return elapsed_ms(t0, &t);
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads more of the request: bytes, 0 at EOF, -1 on an error or the handshake's timeout. */
static ssize_t more(struct conn *c)
{
	ssize_t n;

	if (c->len >= HTTP_HEAD_MAX)
		return -1;
	do
		n = recv(c->fd, c->buf + c->len, HTTP_HEAD_MAX - c->len, 0);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		c->len += (size_t)n;
	return n;
}

static void set_rule(struct conn *c, const char *fmt, const char *arg)
{
	snprintf(c->m.u.conn.rule, sizeof(c->m.u.conn.rule), fmt, arg);
}

/* The policy's verdict on the request: true to go on. The rule that decided goes in the
 * record; *priv says whether it lets the host have non-public addresses. */
static bool decide(struct conn *c, const struct policy_ref *pr, bool *priv)
{
	const struct netrule *r = NULL;
	struct netmsg_conn *mc = &c->m.u.conn;
	bool ok;
	char *text;

	*priv = false;
	if (pr->p.mode != NET_FILTERED) {
		set_rule(c, "mode %s", net_mode_name(pr->p.mode));
		mc->verdict = NETV_DENY;
		return false;
	}
	ok = netpolicy_decide(&pr->p, mc->host, mc->port, &r);
	if (!r) {
		set_rule(c, "%s", "no rule");
	} else {
		text = netrule_text(r);
		set_rule(c, "%s", text);
		free(text);
		*priv = r->priv;
	}
	mc->verdict = ok ? NETV_ALLOW : NETV_DENY;
	return ok;
}

static bool addr_allowed(const struct sockaddr *sa, socklen_t len, bool allow_private, bool priv)
{
	enum addr_class k = addrclass_of(sa, len);

	if (k == ADDR_PUBLIC || allow_private)
		return true;
	/* A host named with "private" may have any unicast address, never these. */
	return priv && k != ADDR_UNSPECIFIED && k != ADDR_MULTICAST && k != ADDR_BROADCAST;
}

static int connect_timed(int fd, const struct sockaddr *sa, socklen_t len, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int err = 0, flags = fcntl(fd, F_GETFL);
	socklen_t elen = sizeof(err);

	fcntl(fd, F_SETFL, flags | O_NONBLOCK);
	if (connect(fd, sa, len) < 0) {
		if (errno != EINPROGRESS)
			return -errno;
		if (poll(&p, 1, ms) <= 0)
			return -ETIMEDOUT;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || err)
			return -(err ? err : errno);
	}
	fcntl(fd, F_SETFL, flags);
	return 0;
}

static void addr_text(const struct sockaddr *sa, char *out, size_t len)
{
	const void *raw = sa->sa_family == AF_INET
			      ? (const void *)&((const struct sockaddr_in *)sa)->sin_addr
			      : (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr;

	if (!inet_ntop(sa->sa_family, raw, out, (socklen_t)len))
		snprintf(out, len, "?");
}

/* Resolves the host and connects to the first address the address policy allows: 0 with c->up
 * set, or -errno with the reason in the record's rule: -EACCES (every address refused), else
 * the resolution's or the connection's failure. */
static int dial(struct conn *c, const struct policy_ref *pr, bool priv)
{
	struct netmsg_conn *mc = &c->m.u.conn;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
	char port[8], refused[48] = "";
	int rc = -EHOSTUNREACH, gai;

	snprintf(port, sizeof(port), "%u", mc->port);
	gai = getaddrinfo(mc->host, port, &hints, &res);
	if (gai) {
		snprintf(mc->rule, sizeof(mc->rule), "cannot resolve: %s", gai_strerror(gai));
		return -EHOSTUNREACH;
	}
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		int fd;

		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		if (!addr_allowed(ai->ai_addr, ai->ai_addrlen, pr->set.allow_private, priv)) {
			if (!refused[0])
				addr_text(ai->ai_addr, refused, sizeof(refused));
			continue;
		}
		addr_text(ai->ai_addr, mc->addr, sizeof(mc->addr));
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		rc =
		    connect_timed(fd, ai->ai_addr, ai->ai_addrlen, (int)pr->set.connect_timeout_ms);
		if (rc == 0) {
			c->up = fd;
			freeaddrinfo(res);
			return 0;
		}
		close(fd);
	}
	freeaddrinfo(res);
	if (refused[0] && !mc->addr[0]) {
		snprintf(mc->rule, sizeof(mc->rule),
			 "address %s is not public (allow HOST private, or allow_private)",
			 refused);
		mc->verdict = NETV_DENY;
		return -EACCES;
	}
	snprintf(mc->rule, sizeof(mc->rule), "connect: %s", strerror(-rc));
	return rc;
}

/* Moves bytes both ways until both sides are done; half-closes follow through. The bytes go
 * socket to pipe to socket by splice, never through this process's memory: a download through
 * the proxy then costs little more than one without it. */
static void relay(struct conn *c)
{
	struct netmsg_conn *mc = &c->m.u.conn;
	int fds[2] = {c->fd, c->up}, pipes[2][2] = {{-1, -1}, {-1, -1}};
	size_t have[2] = {0, 0};
	bool eof[2] = {false, false};
	struct timeval none = {0};

	if (pipe2(pipes[0], O_CLOEXEC | O_NONBLOCK) < 0 ||
	    pipe2(pipes[1], O_CLOEXEC | O_NONBLOCK) < 0)
		goto out;
	for (int d = 0; d < 2; d++) {
		fcntl(pipes[d][1], F_SETPIPE_SZ, PIPE_BYTES); /* a smaller one still works */
		fcntl(fds[d], F_SETFL, fcntl(fds[d], F_GETFL) | O_NONBLOCK);
	}
	/* From here the connection may idle as long as its ends like (a long poll, a socket). */
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof(none));
	for (;;) {
		struct pollfd p[2];

		/* Direction d reads fds[d] into pipes[d] and writes it out to fds[!d]. */
		for (int d = 0; d < 2; d++)
			p[d] = (struct pollfd){.fd = fds[d]};
		for (int d = 0; d < 2; d++) {
			if (have[d])
				p[!d].events |= POLLOUT;
			if (!eof[d] && have[d] < PIPE_BYTES / 2)
				p[d].events |= POLLIN;
		}
		if (!p[0].events && !p[1].events)
			break;
		/* A side with nothing to wait for is left out: its hangup would wake poll at once.
		 */
		for (int d = 0; d < 2; d++)
			if (!p[d].events)
				p[d].fd = -1;
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int d = 0; d < 2; d++) {
			if ((p[d].revents & (POLLIN | POLLHUP | POLLERR)) &&
			    (p[d].events & POLLIN)) {
				ssize_t n = splice(fds[d], NULL, pipes[d][1], NULL, PIPE_BYTES,
						   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

				if (n > 0) {
					have[d] += (size_t)n;
				} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
					eof[d] = true;
					if (n < 0)
						goto out;
				}
			}
			/* Out at once, not after another poll: the socket has room more often
			 * than not, and a poll a chunk would double the calls. */
			if (have[d]) {
				ssize_t n = splice(pipes[d][0], NULL, fds[!d], NULL, have[d],
						   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

				if (n < 0 && errno != EAGAIN && errno != EINTR)
					goto out;
				if (n > 0) {
					have[d] -= (size_t)n;
					*(d == 0 ? &mc->up : &mc->down) += (uint64_t)n;
				}
			}
			if (eof[d] && !have[d] && pipes[d][0] >= 0) {
				shutdown(fds[!d], SHUT_WR);
				close(pipes[d][0]);
				close(pipes[d][1]);
				pipes[d][0] = pipes[d][1] = -1;
			}
		}
	}
out:
	for (int d = 0; d < 2; d++)
		for (int e = 0; e < 2; e++)
			if (pipes[d][e] >= 0)
				close(pipes[d][e]);
}

/* An answer of the proxy's own; extra: more header lines (each ending in CRLF), or "". */
static void http_reply_with(struct conn *c, const char *status, const char *extra, const char *body)
{
	/* The status line and the body each hold a host and a rule at most. */
	char head[512 + 2 * (sizeof(c->m.u.conn.rule) + NETPOLICY_HOST_MAX + 64)];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n%s"
			 "Connection: close\r\n\r\n%s",
			 status, strlen(body), extra, body);

	if (n > 0)
		write_all(c->fd, head, (size_t)n < sizeof(head) ? (size_t)n : sizeof(head) - 1);
}

static void http_reply(struct conn *c, const char *status, const char *body)
{
	http_reply_with(c, status, "", body);
}

/* The answer to a request that is no session's, or past its session's limit. */
static void http_refuse_identity(struct conn *c, int rc)
{
	char body[sizeof(c->m.u.conn.rule) + 64];

	snprintf(body, sizeof(body), "sbxfs proxy: %s\n", c->m.u.conn.rule);
	if (rc == -EBUSY)
		http_reply(c, "503 Service Unavailable", body);
	else
		http_reply_with(c, "407 Proxy Authentication Required",
				"Proxy-Authenticate: Basic realm=\"sbxfs\"\r\n", body);
}

/* "CODE TEXT REASON": the reason, its newline dropped and any byte a status line may not hold
 * made '?', in the status line's reason phrase, where tools that print only the status line
 * (Python's http.client, so pip; Node's agents) show why. */
static const char *status_with_reason(char *buf, size_t size, const char *status,
				      const char *reason)
{
	int n = snprintf(buf, size, "%s %s", status, reason);

	for (int i = (int)strlen(status) + 1; i < n && (size_t)i < size; i++)
		if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] > 0x7e)
			buf[i] = '?';
	if (n > 0 && (size_t)n <= size && buf[n - 1] == '?')
		buf[n - 1] = '\0'; /* the body's newline */
	return buf;
}

/* The one-line answer to a request the proxy does not carry. */
static void http_refuse(struct conn *c, int rc)
{
	struct netmsg_conn *mc = &c->m.u.conn;
	char body[sizeof(mc->rule) + NETPOLICY_HOST_MAX + 64], status[sizeof(body) + 32];

	if (mc->verdict == NETV_DENY) {
		snprintf(body, sizeof(body), "sbxfs network policy: %s:%u denied (%s)\n", mc->host,
			 mc->port, mc->rule);
		http_reply(c, status_with_reason(status, sizeof(status), "403 Forbidden by", body),
			   body);
	} else {
		snprintf(body, sizeof(body), "sbxfs proxy: %s:%u: %s\n", mc->host, mc->port,
			 mc->rule);
		http_reply(c, rc == -ETIMEDOUT ? "504 Gateway Timeout" : "502 Bad Gateway", body);
	}
}

/* The policy's decision on the requested host and port, then the connection: 0 with c->up
 * set, or -errno (-EACCES: refused by the policy) with the record saying why. */
static int connect_up(struct conn *c)
{
	struct policy_ref *pr = policy_get();
	bool priv;
	int rc = decide(c, pr, &priv) ? dial(c, pr, priv) : -EACCES;

	policy_put(pr);
	if (rc < 0 && c->m.u.conn.verdict == NETV_ALLOW)
		c->m.u.conn.verdict = NETV_FAIL;
	return rc;
}

/* Makes c its session's by the password pass: 0, or -errno with the record saying why. */
static int identify(struct conn *c, int found, const char *pass)
{
	struct netmsg_conn *mc = &c->m.u.conn;
	int rc = found < 0 ? found : listener_claim(pass, &c->owner);

	pending_remove(c);
	mc->verdict = NETV_DENY;
	if (rc == -ENOENT)
		set_rule(c, "%s", "no credential (the session's proxy address carries it)");
	else if (rc == -EBUSY)
		snprintf(mc->rule, sizeof(mc->rule), "connection limit %u of the session",
			 listener_conns_max());
	else if (rc < 0)
		set_rule(c, "%s", "wrong credential (no session's)");
	if (rc < 0)
		return rc == -EBUSY ? rc : -EACCES;
	mc->verdict = 0;
	mc->listener = listener_id(c->owner); /* logged under the session it is */
	return 0;
}

static void serve_http(struct conn *c)
{
	struct netmsg_conn *mc = &c->m.u.conn;
	char pass[PROXY_CRED_MAX + 1] = "";
	struct http_req r;
	long head;
	int rc;

	while ((head = http_head_len(c->buf, c->len)) == 0)
		if (more(c) <= 0)
			return;
	if (head < 0) {
		set_rule(c, "%s", "request head too long");
		http_reply(c, "431 Request Header Fields Too Large",
			   "sbxfs proxy: head too long\n");
		return;
	}
	rc = http_parse(c->buf, (size_t)head, &r);
	if (rc < 0) {
		set_rule(c, "%s",
			 rc == -EPERM		  ? "Host header disagrees with the URL"
			 : rc == -EPROTONOSUPPORT ? "not an http:// URL or CONNECT"
						  : "malformed request");
		http_reply(c, "400 Bad Request",
			   rc == -EPROTONOSUPPORT
			       ? "sbxfs proxy: plain requests take http:// URLs; https goes "
				 "through CONNECT\n"
			       : "sbxfs proxy: malformed request\n");
		return;
	}
	snprintf(mc->host, sizeof(mc->host), "%s", r.host);
	mc->port = (uint16_t)r.port;
	mc->proto = r.connect ? 'C' : 'H';
	if ((rc = identify(c, http_credential(c->buf, (size_t)head, pass), pass)) < 0) {
		http_refuse_identity(c, rc);
		free(r.forward);
		return;
	}
	rc = connect_up(c);
	if (rc < 0) {
		http_refuse(c, rc);
	} else if (r.connect) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

		if (write_all(c->fd, ok, sizeof(ok) - 1) == 0 &&
		    write_all(c->up, c->buf + head, c->len - (size_t)head) == 0) {
			mc->up += c->len - (size_t)head;
			relay(c);
		}
	} else if ((mc->up = r.forward_len, write_all(c->up, r.forward, r.forward_len) == 0) &&
		   write_all(c->up, c->buf + head, c->len - (size_t)head) == 0) {
		mc->up += c->len - (size_t)head;
		relay(c);
	}
	free(r.forward);
}

static void socks_reply(struct conn *c, uint8_t code)
{
	uint8_t r[10] = {5, code, 0, 1};

	write_all(c->fd, r, sizeof(r));
}

static void serve_socks(struct conn *c)
{
	struct netmsg_conn *mc = &c->m.u.conn;
	char pass[PROXY_CRED_MAX + 1] = "";
	long n, req;
	int rc;

	mc->proto = 'S';
	while ((n = socks_greeting_len((uint8_t *)c->buf, c->len)) == 0)
		if (more(c) <= 0)
			return;
	if (n < 0) {
		set_rule(c, "%s",
			 "SOCKS5 without a username and password (the session's ALL_PROXY has "
			 "them)");
		write_all(c->fd, "\x05\xff", 2);
		return;
	}
	if (write_all(c->fd, "\x05\x02", 2) < 0)
		return;
	memmove(c->buf, c->buf + n, c->len - (size_t)n);
	c->len -= (size_t)n;
	while ((n = socks_auth((uint8_t *)c->buf, c->len, pass)) == 0)
		if (more(c) <= 0)
			return;
	/* RFC 1929: any status but 0 is a failure, and the connection closes. */
	if (identify(c, n < 0 ? -EACCES : 0, pass) < 0) {
		write_all(c->fd, "\x01\x01", 2);
		return;
	}
	if (write_all(c->fd, "\x01\x00", 2) < 0)
		return;
	memmove(c->buf, c->buf + n, c->len - (size_t)n);
	c->len -= (size_t)n;
	while ((req = socks_request((uint8_t *)c->buf, c->len, mc->host, &(unsigned){0})) == 0)
		if (more(c) <= 0)
			return;
	if (req < 0) {
		set_rule(c, "%s",
			 req == -7 ? "SOCKS command other than CONNECT"
				   : "malformed SOCKS request");
		socks_reply(c, (uint8_t)-req);
		return;
	}
	mc->port = (uint16_t)(((uint8_t)c->buf[req - 2] << 8) | (uint8_t)c->buf[req - 1]);
	rc = connect_up(c);
	if (rc < 0) {
		/* 2: not allowed by the ruleset; 4: host unreachable; 5: refused; 6: TTL expired */
		socks_reply(c, mc->verdict == NETV_DENY ? 2
			       : rc == -ECONNREFUSED	? 5
			       : rc == -ETIMEDOUT	? 6
							: 4);
		return;
	}
	socks_reply(c, 0);
	if (write_all(c->up, c->buf + req, c->len - (size_t)req) == 0) {
		mc->up += c->len - (size_t)req;
		relay(c);
	}
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct timeval tv = {.tv_sec = HANDSHAKE_S};
	bool dropped;
	int one = 1;

	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (more(c) > 0) {
		if (c->buf[0] == 5)
			serve_socks(c);
		else
			serve_http(c);
	}
	if (!c->m.u.conn.host[0])
		strcpy(c->m.u.conn.host, "-");
	if (!c->m.u.conn.addr[0])
		strcpy(c->m.u.conn.addr, "-");
	dropped = pending_remove(c);
	if (!c->m.u.conn.verdict) {
		c->m.u.conn.verdict = NETV_DENY;
		if (dropped)
			snprintf(c->m.u.conn.rule, sizeof(c->m.u.conn.rule),
				 "dropped: no credential yet when %u newer connections waited",
				 PENDING_MAX);
		else if (!c->m.u.conn.rule[0])
			set_rule(c, "%s", "no request");
	}
	c->m.u.conn.ms = (uint32_t)ms_since(&c->t0);
	proxy_report(&c->m, true);
	if (c->up >= 0)
		close(c->up);
	close(c->fd);
	if (c->owner)
		listener_unclaim(c->owner);
	listener_done(c->l);
	free(c);
	return NULL;
}

int conn_start(int fd, struct listener *l)
{
	struct conn *c = xcalloc(1, sizeof(*c));
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	c->fd = fd;
	c->up = -1;
	c->l = l;
	clock_gettime(CLOCK_MONOTONIC, &c->t0);
	c->m.type = NETMSG_CONN;
	c->m.u.conn.listener = listener_id(l);
	c->m.u.conn.proto = '-';
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, STACK_SIZE);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pending_add(c);
	rc = pthread_create(&t, &attr, conn_main, c);
	pthread_attr_destroy(&attr);
	if (rc) {
		pending_remove(c);
		free(c);
		return -rc;
	}
	return 0;
}
