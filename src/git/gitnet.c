/* sbxfs-git's network policy (see gitnet.h). The executable defines connect() and
 * getaddrinfo(): libgit2, libssh2 and the resolver's plugins are shared libraries, so their calls
 * bind to these definitions (symbol interposition), whatever host a URL or a redirect named and
 * whatever DNS answered. getaddrinfo() only remembers which name gave which address, for the
 * message; the check is connect()'s, on the address it is given. glibc's own resolver calls its
 * internal connect, so a DNS server on loopback still works. */
#include "gitnet.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "addrclass.h"

int connect(int fd, const struct sockaddr *addr, socklen_t len);
int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
		struct addrinfo **res);

static bool allow_private;
static char refused[320];

/* The addresses of the last names resolved: enough for one clone's host and a redirect's
 * (libgit2 connects right after it resolves). */
#define NAMES 8
static struct {
	struct sockaddr_storage addr;
	char host[256];
} names[NAMES];
static unsigned next_name;

void gitnet_init(bool allow)
{
	allow_private = allow;
}

const char *gitnet_refused(void)
{
	return refused[0] ? refused : NULL;
}

static bool same_ip(const struct sockaddr *a, const struct sockaddr_storage *b)
{
	if (a->sa_family != b->ss_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
}

/* A host name as resolved, shown only if it looks like one (a redirect's Location is the
 * server's text). */
static const char *host_of(const struct sockaddr *addr)
{
	for (unsigned i = 0; i < NAMES; i++) {
		const char *h = names[(next_name - 1 - i) % NAMES].host;

		if (h[0] && same_ip(addr, &names[(next_name - 1 - i) % NAMES].addr))
			return strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					 "0123456789.-_:%") == strlen(h)
				   ? h
				   : "(a host name)";
	}
	return NULL;
}

static void record_refusal(const struct sockaddr *addr, socklen_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	const void *raw = addr->sa_family == AF_INET
			      ? (const void *)&((const struct sockaddr_in *)addr)->sin_addr
			      : (const void *)&((const struct sockaddr_in6 *)addr)->sin6_addr;
	const char *host;

	if (refused[0] || len < (addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
							    : sizeof(struct sockaddr_in6)))
		return;
	inet_ntop(addr->sa_family, raw, ip, sizeof(ip));
	host = host_of(addr);
	snprintf(refused, sizeof(refused), "%s (%s)", host ? host : ip, ip);
}

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	bool ip = addr && (addr->sa_family == AF_INET || addr->sa_family == AF_INET6);

	/* Unix sockets: the resolver's plugins (nscd, systemd-resolved); AF_UNSPEC disconnects. */
	if (!addr || (!ip && addr->sa_family != AF_UNIX && addr->sa_family != AF_UNSPEC)) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	if (ip && !allow_private && addrclass_of(addr, len) != ADDR_PUBLIC) {
		record_refusal(addr, len);
		errno = EACCES;
		return -1;
	}
	return (int)syscall(SYS_connect, fd, addr, len);
}

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
		struct addrinfo **res)
{
	static int (*real)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
	int rc;

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "getaddrinfo");
	if (!real)
		return EAI_SYSTEM;
	rc = real(node, service, hints, res);
	for (struct addrinfo *ai = rc == 0 && node ? *res : NULL; ai; ai = ai->ai_next) {
		unsigned i = next_name++ % NAMES;

		if (ai->ai_addrlen > sizeof(names[i].addr))
			continue;
		memcpy(&names[i].addr, ai->ai_addr, ai->ai_addrlen);
		snprintf(names[i].host, sizeof(names[i].host), "%s", node);
	}
	return rc;
}
