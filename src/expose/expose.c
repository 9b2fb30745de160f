/* The table of exposed ports (see expose.h): their bounds, names and host listeners, and what
 * the relay counted for each. */
#include "expose.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "changes.h"
#include "expose_relay.h"
#include "log.h"
#include "xmalloc.h"

/* Connections the kernel queues for a listener before the relay accepts them. */
#define LISTEN_BACKLOG 511

struct exposure {
	unsigned port;
	uint32_t serial;
	char *name;
	unsigned host_port;
	struct timespec created;
	struct relay_listener *rl; /* NULL when not relayed */
	struct relay_stats st;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct exposure **tab; /* lock: sorted by port */
static size_t ntab;
static uint32_t last_serial;
static bool relayed; /* the sandbox has a network of its own */
static unsigned max_ports;
static struct sockaddr_storage listen_addr;
static socklen_t listen_len;
static char address[INET6_ADDRSTRLEN];

int expose_init(const struct config *cfg)
{
	bool loopback;
	int rc;

	max_ports = cfg->expose_max_ports;
	relayed = cfg->isolate && cfg->net_mode != NET_HOST;
	if (!relayed) {
		snprintf(address, sizeof(address), "127.0.0.1");
		return 0;
	}
	if (config_expose_addr(cfg->expose_address, &listen_addr, &listen_len, &loopback) < 0)
		return -EINVAL;
	inet_ntop(listen_addr.ss_family,
		  listen_addr.ss_family == AF_INET
		      ? (void *)&((struct sockaddr_in *)&listen_addr)->sin_addr
		      : (void *)&((struct sockaddr_in6 *)&listen_addr)->sin6_addr,
		  address, sizeof(address));
	if (!loopback)
		log_warnx("exposed ports listen on %s, not a loopback address (expose_public = "
			  "yes): whoever reaches it reaches the sandbox's exposed servers",
			  address);
	if ((rc = relay_start(cfg->expose_max_connections)) < 0)
		log_warnx("exposed ports: no relay: %s", strerror(-rc));
	return rc;
}

static void exposure_free(struct exposure *x)
{
	if (x->rl)
		relay_unlisten(x->rl);
	free(x->name);
	free(x);
}

void expose_shutdown(void)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < ntab; i++)
		exposure_free(tab[i]);
	free(tab);
	tab = NULL;
	ntab = 0;
	pthread_mutex_unlock(&lock);
	if (relayed)
		relay_stop();
}

int expose_parse_port(const char *text, size_t len, unsigned *port)
{
	unsigned v = 0;

	if (len == 0 || len > 5 || text[0] == '0')
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (text[i] < '0' || text[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(text[i] - '0');
	}
	if (v > 65535)
		return -EINVAL;
	*port = v;
	return 0;
}

/* lock held: where port is, or where it would go. */
static size_t find(unsigned port, bool *found)
{
	size_t lo = 0, hi = ntab;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (tab[mid]->port < port)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < ntab && tab[lo]->port == port;
	return lo;
}

/* A listener on expose_address at a free port: its fd, or -errno. */
static int make_listener(unsigned *host_port)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int fd = socket(listen_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&listen_addr, listen_len) < 0 ||
	    listen(fd, LISTEN_BACKLOG) < 0 || getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	*host_port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
						   : ((struct sockaddr_in6 *)&ss)->sin6_port);
	return fd;
}

int expose_add(unsigned port)
{
	struct exposure *x;
	bool found;
	size_t at;
	int fd = -1;

	if (port < 1 || port > 65535)
		return -EINVAL;
	pthread_mutex_lock(&lock);
	at = find(port, &found);
	if (found || ntab >= max_ports) {
		pthread_mutex_unlock(&lock);
		return found ? -EEXIST : -ENOSPC;
	}
	x = xcalloc(1, sizeof(*x));
	x->port = port;
	x->host_port = port;
	x->name = xstrdup("");
	clock_gettime(CLOCK_REALTIME, &x->created);
	if (relayed && (fd = make_listener(&x->host_port)) < 0) {
		pthread_mutex_unlock(&lock);
		exposure_free(x);
		return fd;
	}
	if (relayed)
		x->rl = relay_listen(fd, port, &x->st);
	if (++last_serial > EXPOSE_SERIAL_MAX)
		last_serial = 1;
	x->serial = last_serial;
	tab = xrealloc(tab, (ntab + 1) * sizeof(*tab));
	memmove(&tab[at + 1], &tab[at], (ntab - at) * sizeof(*tab));
	tab[at] = x;
	ntab++;
	pthread_mutex_unlock(&lock);
	log_info("port %u exposed at %s:%u", port, address, x->host_port);
	changes_note();
	return 0;
}

int expose_remove(unsigned port)
{
	struct exposure *x;
	bool found;
	size_t at;

	pthread_mutex_lock(&lock);
	at = find(port, &found);
	if (!found) {
		pthread_mutex_unlock(&lock);
		return -ENOENT;
	}
	x = tab[at];
	memmove(&tab[at], &tab[at + 1], (ntab - at - 1) * sizeof(*tab));
	ntab--;
	pthread_mutex_unlock(&lock);
	exposure_free(x);
	log_info("port %u no longer exposed", port);
	changes_note();
	return 0;
}

static void fill(const struct exposure *x, struct expose_info *info)
{
	*info = (struct expose_info){
	    .port = x->port,
	    .serial = x->serial,
	    .name = xstrdup(x->name),
	    .host_port = x->host_port,
	    .relayed = x->rl != NULL,
	    .created = x->created,
	    .active = atomic_load(&x->st.active),
	    .accepted = atomic_load(&x->st.accepted),
	    .refused = atomic_load(&x->st.refused),
	};
	memcpy(info->address, address, sizeof(address));
}

int expose_get(unsigned port, uint32_t serial, struct expose_info *info)
{
	bool found;
	size_t at;

	pthread_mutex_lock(&lock);
	at = find(port, &found);
	found = found && (!serial || tab[at]->serial == serial);
	if (found)
		fill(tab[at], info);
	pthread_mutex_unlock(&lock);
	return found ? 0 : -ENOENT;
}

size_t expose_list(struct expose_info **v)
{
	size_t n;

	pthread_mutex_lock(&lock);
	n = ntab;
	*v = xcalloc(n ? n : 1, sizeof(**v));
	for (size_t i = 0; i < n; i++)
		fill(tab[i], &(*v)[i]);
	pthread_mutex_unlock(&lock);
	return n;
}

void expose_info_clear(struct expose_info *info)
{
	free(info->name);
	info->name = NULL;
}

void expose_list_free(struct expose_info *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		expose_info_clear(&v[i]);
	free(v);
}

char *expose_url(const struct expose_info *info)
{
	bool v6 = strchr(info->address, ':') != NULL;

	return xasprintf("http://%s%s%s:%u/", v6 ? "[" : "", info->address, v6 ? "]" : "",
			 info->host_port);
}

char *expose_status(const struct expose_info *info)
{
	char *url = expose_url(info);
	char *text = xasprintf(
	    "port %u\nurl %s\naddress %s\nhost_port %u\nrelayed %s\n"
	    "connections %u\naccepted %llu\nrefused %llu\n%s%s%s",
	    info->port, url, info->address, info->host_port, info->relayed ? "yes" : "no",
	    info->active, (unsigned long long)info->accepted, (unsigned long long)info->refused,
	    info->name[0] ? "name " : "", info->name, info->name[0] ? "\n" : "");

	free(url);
	return text;
}

int expose_set_name(unsigned port, uint32_t serial, const char *name, size_t len, bool check_only)
{
	bool found;
	size_t at;

	if (len && name[len - 1] == '\n')
		len--;
	if (len > EXPOSE_NAME_MAX)
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return -EINVAL;
	pthread_mutex_lock(&lock);
	at = find(port, &found);
	found = found && tab[at]->serial == serial;
	if (found && !check_only) {
		free(tab[at]->name);
		tab[at]->name = xstrndup(name, len);
	}
	pthread_mutex_unlock(&lock);
	if (found && !check_only)
		changes_note();
	return found ? 0 : -ENOENT;
}
