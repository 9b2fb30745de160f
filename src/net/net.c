/* The sandbox's network (see net.h): the mode and the policy in force, sbxfs-netproxy's life
 * (started as an unprivileged user, restarted with backoff, handed the policy and every
 * listener again after a restart), the listeners of sessions and contexts, and the records the
 * proxy sends, read on the loop thread a bounded batch at a time. */
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backoff.h"
#include "changes.h"
#include "journal.h"
#include "launch.h"
#include "log.h"
#include "loop.h"
#include "net_priv.h"
#include "netns.h"
#include "xmalloc.h"

/* Records read per wakeup of the loop: a burst of connections cannot hold it. */
#define RECORDS_PER_WAKE   64
#define CONNECT_TIMEOUT_MS 10000
/* The proxy's descriptors: six per connection (sockets, pipes), 4096 connections. */
#define PROXY_FDS 32768

static const struct config *cfg;
static char *proxy_bin;
static enum net_mode mode;
static struct netpolicy policy; /* rules in force; its mode is `mode` */
static bool running;		/* a proxy is wanted (none or filtered, with a namespace) */
static pid_t proxy_pid;
static int ctl = -1;
static struct loop_fd *ctl_watch;
static struct backoff backoff;
static struct loop_timer restart_timer;
static uid_t proxy_uid = 65534;
static gid_t proxy_gid = 65534;
static uint32_t next_id = 1;
static LIST_HEAD(, net_client) clients = LIST_HEAD_INITIALIZER(clients);

enum net_mode net_mode(void)
{
	return mode;
}

char *net_describe(void)
{
	return xasprintf("network %s\n", net_mode_name(mode));
}

/* Core lock held. */
static int send_policy(void)
{
	struct netmsg m = {.type = NETMSG_POLICY};
	size_t len;
	char *text = netpolicy_render(&policy, &len);
	int fd = memfd_create("sbxfs-netpolicy", MFD_CLOEXEC), rc = 0;

	m.u.policy.allow_private = cfg->net_allow_private;
	m.u.policy.conns_max = (uint32_t)cfg->net_conns_max;
	m.u.policy.connect_timeout_ms = CONNECT_TIMEOUT_MS;
	if (fd < 0 || write(fd, text, len) != (ssize_t)len)
		rc = -errno;
	if (rc == 0 && ctl >= 0)
		rc = netmsg_send(ctl, &m, fd, true);
	if (fd >= 0)
		close(fd);
	free(text);
	if (rc < 0)
		log_warnx("the network policy did not reach sbxfs-netproxy: %s", strerror(-rc));
	return rc;
}

/* A credential no one can guess: 128 bits from the kernel's random pool, as hex. */
static void make_secret(char secret[NETMSG_SECRET_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	uint8_t raw[NETMSG_SECRET_LEN / 2];
	size_t got = 0;

	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

		if (n < 0 && errno != EINTR)
			fatal("getrandom");
		got += n > 0 ? (size_t)n : 0;
	}
	for (size_t i = 0; i < sizeof(raw); i++) {
		secret[2 * i] = hex[raw[i] >> 4];
		secret[2 * i + 1] = hex[raw[i] & 15];
	}
	secret[NETMSG_SECRET_LEN] = '\0';
}

static void send_listener(struct net_client *c)
{
	struct netmsg m = {.type = NETMSG_LISTEN, .id = c->id};
	int rc;

	memcpy(m.u.listen.secret, c->secret, sizeof(c->secret));
	rc = ctl >= 0 ? netmsg_send(ctl, &m, c->fd, true) : 0;

	if (rc < 0)
		log_warnx("listener of %s not handed to sbxfs-netproxy: %s", c->label,
			  strerror(-rc));
}

static struct net_client *client_by_id(uint32_t id)
{
	struct net_client *c;

	LIST_FOREACH(c, &clients, link)
	if (c->id == id)
		return c;
	return NULL;
}

static void on_records(struct loop_fd *lf, uint32_t events, void *arg)
{
	struct netmsg m;
	int fd, rc = 1;

	(void)lf;
	(void)events;
	(void)arg;
	for (int i = 0; i < RECORDS_PER_WAKE && (rc = netmsg_recv(ctl, &m, &fd)) != -EAGAIN; i++) {
		if (fd >= 0)
			close(fd);
		if (rc <= 0)
			break; /* its end: on_proxy_exit follows */
		if (m.type == NETMSG_CONN)
			netlog_record(client_by_id(m.u.conn.listener), &m.u.conn);
	}
	if (rc <= 0 && rc != -EAGAIN && ctl_watch) {
		loop_del_fd(ctl_watch);
		ctl_watch = NULL;
	}
}

/* In the child: fd 3 the socket, then the proxy's user, and exec. */
static void __attribute__((noreturn)) exec_proxy(int sock)
{
	struct rlimit fds = {PROXY_FDS, PROXY_FDS};
	char *argv[] = {"sbxfs-netproxy", NULL}, *envp[] = {NULL};
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	if (dup2(sock, 3) < 0)
		_exit(127);
	close_range(4, ~0U, 0);
	setrlimit(RLIMIT_NOFILE, &fds);
	if (setgroups(0, NULL) < 0 || setgid(proxy_gid) < 0 || setuid(proxy_uid) < 0) {
		dprintf(2, "sbxfs-netproxy: cannot drop privileges: %s\n", strerror(errno));
		_exit(126);
	}
	execve(proxy_bin, argv, envp);
	dprintf(2, "sbxfs: exec %s: %s\n", proxy_bin, strerror(errno));
	_exit(127);
}

static void on_proxy_exit(void *arg, int status);

/* Core lock held. */
static int start_proxy(void)
{
	int sv[2], big = 4 << 20;
	struct net_client *c;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return -errno;
	}
	if (pid == 0)
		exec_proxy(sv[1]);
	close(sv[1]);
	ctl = sv[0];
	/* A burst of records waits in the socket, not in the proxy's threads. */
	setsockopt(ctl, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
	setsockopt(ctl, SOL_SOCKET, SO_SNDTIMEO, &(struct timeval){.tv_sec = 2},
		   sizeof(struct timeval));
	proxy_pid = pid;
	backoff_started(&backoff, loop_now_ns());
	launch_watch_child(pid, on_proxy_exit, NULL);
	ctl_watch = loop_add_fd(ctl, EPOLLIN, on_records, NULL);
	send_policy();
	LIST_FOREACH(c, &clients, link)
	send_listener(c);
	backoff_up(&backoff);
	return 0;
}

static void restart(struct loop_timer *t)
{
	int rc;

	(void)t;
	if (running && proxy_pid == 0 && (rc = start_proxy()) < 0) {
		log_warnx("sbxfs-netproxy not started: %s", strerror(-rc));
		loop_timer_arm(&restart_timer, BACKOFF_MAX_MS);
	}
}

static void on_proxy_exit(void *arg, int status)
{
	bool streak;
	uint64_t delay;

	(void)arg;
	proxy_pid = 0;
	if (ctl_watch)
		loop_del_fd(ctl_watch);
	ctl_watch = NULL;
	if (ctl >= 0)
		close(ctl);
	ctl = -1;
	if (!running)
		return;
	delay = backoff_died(&backoff, loop_now_ns(), &streak);
	if (streak)
		log_warnx("sbxfs-netproxy ended (%s %d): restarting it; connections under way "
			  "were cut",
			  WIFSIGNALED(status) ? "signal" : "status",
			  WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	loop_timer_arm(&restart_timer, delay);
}

int net_init(const struct config *c, const char *bin, char *err, size_t errlen)
{
	char *text = config_net_policy(c), why[160];
	struct passwd *pw = getpwnam("nobody");
	int rc;

	cfg = c;
	mode = c->net_mode;
	rc = netpolicy_parse(text, strlen(text), &policy, why, sizeof(why));
	free(text);
	if (rc < 0) {
		snprintf(err, errlen, "[network] rules: %s", why);
		return rc;
	}
	netlog_init();
	restart_timer.fn = restart;
	if (!c->isolate)
		mode = NET_HOST; /* what commands have without bubblewrap, whatever was asked */
	if (mode == NET_HOST)
		return 0;
	if (netns_fd() < 0) {
		if (mode == NET_NONE)
			return 0; /* bwrap's own namespace, as without a proxy */
		snprintf(err, errlen,
			 "network = filtered needs the daemon to run as root: it makes "
			 "the sandbox's network namespace and the proxy's listeners in it");
		return -EPERM;
	}
	if (pw) {
		proxy_uid = pw->pw_uid;
		proxy_gid = pw->pw_gid;
	}
	if (access(bin, X_OK) < 0) {
		rc = -errno;
		if (mode == NET_NONE) {
			/* none works without it: only the quick refusals are lost */
			log_warnx("%s: %s: no proxy, so tools that retry take their time to fail",
				  bin, strerror(-rc));
			return 0;
		}
		snprintf(err, errlen, "%s: %s", bin, strerror(-rc));
		return rc;
	}
	proxy_bin = xstrdup(bin);
	running = true;
	core_lock();
	rc = start_proxy();
	core_unlock();
	if (rc < 0)
		snprintf(err, errlen, "starting sbxfs-netproxy: %s", strerror(-rc));
	return rc;
}

void net_shutdown(void)
{
	running = false;
	if (ctl >= 0)
		close(ctl); /* the proxy exits at its end of the socket */
	ctl = -1;
	if (proxy_pid > 0) {
		kill(proxy_pid, SIGKILL);
		waitpid(proxy_pid, NULL, 0);
	}
	proxy_pid = 0;
	netpolicy_free(&policy);
	netlog_shutdown();
	netns_close();
	free(proxy_bin);
	proxy_bin = NULL;
}

struct net_client *net_client_open(const char *label)
{
	struct net_client *c;
	uint16_t port;
	int fd;

	if (!running)
		return NULL;
	fd = netns_listen(0, &port);
	if (fd < 0) {
		log_warnx("no proxy listener for %s: %s", label, strerror(-fd));
		return NULL;
	}
	c = xcalloc(1, sizeof(*c));
	c->id = next_id++;
	c->label = xstrdup(label);
	c->fd = fd;
	c->port = port;
	make_secret(c->secret);
	netlog_client_init(c);
	LIST_INSERT_HEAD(&clients, c, link);
	send_listener(c);
	return c;
}

void net_client_env(const struct net_client *c, struct envlist *env)
{
	static const char *const http[] = {"HTTP_PROXY",       "http_proxy",
					   "HTTPS_PROXY",      "https_proxy",
					   "npm_config_proxy", "npm_config_https_proxy",
					   "PIP_PROXY"};
	static const char *const socks[] = {"ALL_PROXY", "all_proxy"};
	static const char *const none[] = {"NO_PROXY", "no_proxy"};
	char url[128];

	if (!c)
		return;
	/* The credential makes the session's own requests its own: without it the proxy refuses
	 * (407), so another session's listener is no way to use or fill its share. */
	snprintf(url, sizeof(url), "http://" NETMSG_PROXY_USER ":%s@127.0.0.1:%u", c->secret,
		 c->port);
	for (size_t i = 0; i < sizeof(http) / sizeof(http[0]); i++)
		envlist_set(env, http[i], url);
	snprintf(url, sizeof(url), "socks5h://" NETMSG_PROXY_USER ":%s@127.0.0.1:%u", c->secret,
		 c->port);
	for (size_t i = 0; i < 2; i++)
		envlist_set(env, socks[i], url);
	/* The sandbox's own servers stay direct: they share its loopback. */
	for (size_t i = 0; i < 2; i++)
		envlist_set(env, none[i], "localhost,127.0.0.1,::1");
	envlist_set(env, "NODE_USE_ENV_PROXY", "1");
}

void net_client_close(struct net_client *c)
{
	struct netmsg m = {.type = NETMSG_UNLISTEN};

	if (!c || c->fd < 0)
		return;
	m.id = c->id;
	if (ctl >= 0)
		netmsg_send(ctl, &m, -1, true);
	close(c->fd);
	c->fd = -1;
	LIST_REMOVE(c, link);
}

void net_client_free(struct net_client *c)
{
	if (!c)
		return;
	netlog_client_free(c);
	free(c->label);
	free(c);
}

char *net_policy_read(size_t *len)
{
	char *text;

	core_lock();
	policy.mode = mode;
	text = netpolicy_render(&policy, len);
	core_unlock();
	return text;
}

/* Core lock held: whether p may replace the policy in force (else why). */
static int allowed_change(const struct netpolicy *p, char *why, size_t whylen)
{
	enum net_mode to = p->has_mode ? p->mode : mode;
	const char *no = NULL;

	if ((to == NET_HOST) != (mode == NET_HOST))
		no = "mode host and the others differ by a network namespace: only a remount "
		     "switches";
	else if (to == NET_HOST && p->n)
		no = "in mode host no rule decides anything";
	else if (to == NET_FILTERED && !running)
		no = "mode filtered needs the proxy, which this mount did not start (mode host at "
		     "mount)";
	if (no)
		snprintf(why, whylen, "%s", no);
	return no ? -EOPNOTSUPP : 0;
}

int net_policy_check_line(const char *line, size_t len, char *why, size_t whylen)
{
	struct netpolicy p = {0};
	int rc = netpolicy_line(line, len, &p, why, whylen);

	if (rc == 0) {
		core_lock();
		rc = allowed_change(&p, why, whylen);
		core_unlock();
	}
	netpolicy_free(&p);
	return rc;
}

static void journal_policy(void)
{
	struct jrec r;

	jrec_begin(&r, "policy.set", NULL);
	jrec_str(&r, "mode", net_mode_name(mode));
	jrec_int(&r, "rules", (long long)policy.n);
	jrec_commit(&r);
}

int net_policy_write(const char *text, size_t len, char *why, size_t whylen)
{
	struct netpolicy p;
	int rc = netpolicy_parse(text, len, &p, why, whylen);

	if (rc < 0)
		return rc;
	core_lock();
	rc = allowed_change(&p, why, whylen);
	if (rc == 0) {
		if (p.has_mode)
			mode = p.mode;
		netpolicy_free(&policy);
		policy = p;
		policy.mode = mode;
		if (running)
			send_policy();
		log_info("network policy: mode %s, %zu rules", net_mode_name(mode), policy.n);
		journal_policy();
		changes_note();
	} else {
		netpolicy_free(&p);
	}
	core_unlock();
	return rc;
}
