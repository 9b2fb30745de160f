/* sbxfs-netproxy: the sandbox's HTTP and SOCKS5 proxy, started by the daemon as an unprivileged
 * user with a socketpair on fd 3 (netmsg.h). The daemon hands it listening sockets that live in
 * the sandbox's network namespace and the policy; it accepts on them, serves each connection on
 * a thread (proxyconn.c), and reports every connection. It parses what the sandbox sends, so it
 * runs confined (proxyfilter.c) and holds nothing but its sockets.
 * A listener belongs to one session, whose proxy address carries the listener's secret: a
 * request is its session's only by that credential (whatever port it came in on), counted
 * against that session's connections_max, and logged under its name; one without is refused. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "proxy_priv.h"
#include "xmalloc.h"

#define CTL_FD 3
/* Connections at once over every listener: each is a thread. */
#define CONNS_ALL_MAX 4096
/* The policy's text at most (100,000 rules of a long name each fit). */
#define POLICY_TEXT_MAX (32u << 20)

struct listener {
	uint32_t id;
	int fd;
	char secret[NETMSG_SECRET_LEN + 1];
	unsigned refs;	  /* connections that came in on it or are its session's */
	unsigned claimed; /* connections that are its session's, by their credential */
	bool closed;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct policy_ref *policy;
static struct listener **ls;
static size_t nls;
static unsigned active_all;

struct policy_ref *policy_get(void)
{
	struct policy_ref *pr;

	pthread_mutex_lock(&lock);
	pr = policy;
	pr->refs++;
	pthread_mutex_unlock(&lock);
	return pr;
}

void policy_put(struct policy_ref *pr)
{
	bool last;

	pthread_mutex_lock(&lock);
	last = --pr->refs == 0;
	pthread_mutex_unlock(&lock);
	if (last) {
		netpolicy_free(&pr->p);
		free(pr);
	}
}

void proxy_report(const struct netmsg *m, bool wait)
{
	/* A packet is sent whole: threads need no lock, and the accepting one never waits on
	 * a thread blocked here. */
	int rc = netmsg_send(CTL_FD, m, -1, wait);

	if (rc < 0 && rc != -EPIPE && rc != -EAGAIN)
		log_warnx("report to the daemon: %s", strerror(-rc));
}

uint32_t listener_id(const struct listener *l)
{
	return l->id;
}

/* Lock held: drops one reference; true if l is to be freed. */
static bool put_locked(struct listener *l)
{
	return --l->refs == 0 && l->closed;
}

void listener_done(struct listener *l)
{
	bool gone;

	pthread_mutex_lock(&lock);
	active_all--;
	gone = put_locked(l);
	pthread_mutex_unlock(&lock);
	if (gone)
		free(l);
}

/* Compares every byte whatever the first difference: how long it takes says nothing of how
 * much of a secret was right. */
static bool same_secret(const char *a, const char *b)
{
	unsigned char diff = 0;

	for (size_t i = 0; i < NETMSG_SECRET_LEN; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return diff == 0;
}

int listener_claim(const char *pass, struct listener **owner)
{
	struct listener *found = NULL;
	struct policy_ref *pr = policy_get();
	unsigned max = pr->set.conns_max;
	int rc = -EACCES;

	policy_put(pr);
	if (strlen(pass) != NETMSG_SECRET_LEN)
		return -EACCES;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < nls; i++)
		if (same_secret(pass, ls[i]->secret))
			found = ls[i];
	if (found && found->claimed >= max) {
		rc = -EBUSY;
	} else if (found) {
		found->claimed++;
		found->refs++;
		*owner = found;
		rc = 0;
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

void listener_unclaim(struct listener *l)
{
	bool gone;

	pthread_mutex_lock(&lock);
	l->claimed--;
	gone = put_locked(l);
	pthread_mutex_unlock(&lock);
	if (gone)
		free(l);
}

unsigned listener_conns_max(void)
{
	struct policy_ref *pr = policy_get();
	unsigned max = pr->set.conns_max;

	policy_put(pr);
	return max;
}

/* Lock held. */
static struct listener *find(uint32_t id, size_t *at)
{
	for (size_t i = 0; i < nls; i++) {
		if (ls[i]->id == id) {
			*at = i;
			return ls[i];
		}
	}
	return NULL;
}

static void unlisten(uint32_t id)
{
	struct listener *l;
	size_t i;
	bool gone = false;

	pthread_mutex_lock(&lock);
	if ((l = find(id, &i))) {
		ls[i] = ls[--nls];
		close(l->fd);
		l->closed = true;
		gone = l->refs == 0;
	}
	pthread_mutex_unlock(&lock);
	if (gone)
		free(l);
}

static void listen_on(uint32_t id, int fd, const struct netmsg_listen *ml)
{
	struct listener *l = xcalloc(1, sizeof(*l));

	unlisten(id);
	l->id = id;
	l->fd = fd;
	memcpy(l->secret, ml->secret, sizeof(l->secret));
	l->secret[NETMSG_SECRET_LEN] = '\0';
	pthread_mutex_lock(&lock);
	ls = xrealloc(ls, (nls + 1) * sizeof(*ls));
	ls[nls++] = l;
	pthread_mutex_unlock(&lock);
}

/* The policy's text from the daemon's memfd; a text that does not parse keeps the one in
 * force (the daemon checked it: this is a bug, not the sandbox's doing). */
static void set_policy(const struct netmsg_policy *set, int fd)
{
	struct policy_ref *pr = xcalloc(1, sizeof(*pr)), *old;
	struct stat st;
	char *text = NULL, err[160];
	size_t got = 0;

	if (fstat(fd, &st) < 0 || st.st_size < 0 || (uint64_t)st.st_size > POLICY_TEXT_MAX)
		goto bad;
	text = xmalloc((size_t)st.st_size + 1);
	while (got < (size_t)st.st_size) {
		ssize_t n = pread(fd, text + got, (size_t)st.st_size - got, (off_t)got);

		if (n <= 0)
			goto bad;
		got += (size_t)n;
	}
	if (netpolicy_parse(text, got, &pr->p, err, sizeof(err)) < 0) {
		log_warnx("policy refused: %s", err);
		goto bad;
	}
	pr->refs = 1;
	pr->set = *set;
	pthread_mutex_lock(&lock);
	old = policy;
	policy = pr;
	pthread_mutex_unlock(&lock);
	policy_put(old);
	free(text);
	return;
bad:
	free(text);
	free(pr);
}

static void ctl_message(void)
{
	struct netmsg m;
	int fd, rc = netmsg_recv(CTL_FD, &m, &fd);

	if (rc == -EAGAIN)
		return;
	if (rc == 0)
		exit(0); /* the daemon is gone */
	if (rc < 0)
		fatalx("bad message from the daemon");
	switch (m.type) {
	case NETMSG_LISTEN:
		if (fd >= 0) {
			listen_on(m.id, fd, &m.u.listen); /* keeps fd */
			return;
		}
		break;
	case NETMSG_UNLISTEN:
		unlisten(m.id);
		break;
	case NETMSG_POLICY:
		if (fd >= 0)
			set_policy(&m.u.policy, fd);
		break;
	default:
		break;
	}
	if (fd >= 0)
		close(fd);
}

/* A connection past the proxy's limit is closed at once, and reported. */
static void refuse(struct listener *l, int fd, unsigned max)
{
	struct netmsg m = {.type = NETMSG_CONN};

	close(fd);
	m.u.conn.listener = l->id;
	m.u.conn.verdict = NETV_DENY;
	m.u.conn.proto = '-';
	strcpy(m.u.conn.host, "-");
	strcpy(m.u.conn.addr, "-");
	snprintf(m.u.conn.rule, sizeof(m.u.conn.rule), "connection limit %u", max);
	proxy_report(&m, false); /* the accepting thread never waits for the daemon */
}

static void accept_on(struct listener *l)
{
	int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return;
	/* A session's own limit is checked once its credential is read (listener_claim): a
	 * connection is nobody's until then, whatever port it came in on. */
	pthread_mutex_lock(&lock);
	if (active_all >= CONNS_ALL_MAX) {
		pthread_mutex_unlock(&lock);
		refuse(l, fd, CONNS_ALL_MAX);
		return;
	}
	l->refs++;
	active_all++;
	pthread_mutex_unlock(&lock);
	if (conn_start(fd, l) < 0) {
		close(fd);
		listener_done(l);
	}
}

int main(void)
{
	struct pollfd *p = NULL;
	struct listener **seen = NULL;

	log_init("sbxfs-netproxy", LOG_LVL_INFO, stderr);
	policy = xcalloc(1, sizeof(*policy));
	policy->refs = 1;
	policy->set.conns_max = 1;
	/* Two sockets and two pipes a connection. */
	if (proxy_confine(CONNS_ALL_MAX * 6 + 64) < 0)
		fatal("confining the proxy");
	for (;;) {
		size_t n;

		pthread_mutex_lock(&lock);
		n = nls;
		p = xrealloc(p, (n + 1) * sizeof(*p));
		seen = xrealloc(seen, (n + 1) * sizeof(*seen));
		for (size_t i = 0; i < n; i++) {
			p[i + 1] = (struct pollfd){.fd = ls[i]->fd, .events = POLLIN};
			seen[i + 1] = ls[i];
		}
		pthread_mutex_unlock(&lock);
		p[0] = (struct pollfd){.fd = CTL_FD, .events = POLLIN};
		if (poll(p, n + 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			fatal("poll");
		}
		/* Listeners first: a message may close one of them. */
		for (size_t i = 1; i <= n; i++)
			if (p[i].revents & POLLIN)
				accept_on(seen[i]);
		if (p[0].revents)
			ctl_message();
	}
}
