/* Fuzz target: what a checkout's policy reads from outside (src/git/gitlocal.c,
 * src/git/addrclass.c): the URL of a checkout line and the addresses a name resolves to. The first
 * 16 bytes are an address, the rest a URL. Properties: a URL's local path is the URL itself for a
 * plain path and absolute for a file:// URL; rebasing a source in the workspace moves its path
 * under the host's workspace, in the URL's form, and leaves any other URL as it is; an IPv4 address
 * is classed alike alone, as a sockaddr, and IPv4-mapped, NAT64 or 6to4 in IPv6. */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "addrclass.h"
#include "fuzz.h"
#include "gitlocal.h"
#include "xmalloc.h"

#define INSIDE "/workspace"
#define HOST   "/srv/ws"

static void check_v4(const uint8_t *b)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6};
	uint8_t *a6 = sin6.sin6_addr.s6_addr;
	enum addr_class c;

	memcpy(&sin.sin_addr.s_addr, b, 4);
	c = addrclass_v4(sin.sin_addr.s_addr);
	FUZZ_ASSERT(addrclass_of((struct sockaddr *)&sin, sizeof(sin)) == c);
	FUZZ_ASSERT(addrclass_of((struct sockaddr *)&sin, sizeof(sin) - 1) == ADDR_RESERVED);
	FUZZ_ASSERT((b[0] == 127) == (c == ADDR_LOOPBACK));
	FUZZ_ASSERT(b[0] != 10 || c == ADDR_PRIVATE);
	a6[10] = a6[11] = 0xff; /* ::ffff:a.b.c.d */
	memcpy(a6 + 12, b, 4);
	FUZZ_ASSERT(addrclass_v6(a6) == c);
	FUZZ_ASSERT(addrclass_of((struct sockaddr *)&sin6, sizeof(sin6)) == c);
	memset(a6, 0, 16); /* 64:ff9b::a.b.c.d */
	a6[1] = 0x64, a6[2] = 0xff, a6[3] = 0x9b;
	memcpy(a6 + 12, b, 4);
	FUZZ_ASSERT(addrclass_v6(a6) == c);
	memset(a6, 0, 16); /* 2002:aabb:ccdd:: */
	a6[0] = 0x20, a6[1] = 0x02;
	memcpy(a6 + 2, b, 4);
	FUZZ_ASSERT(addrclass_v6(a6) == c);
}

static void check_rebase(const char *url)
{
	char *path = gitlocal_path(url), *out = gitlocal_rebase(url, INSIDE, HOST), *moved;
	size_t n = strlen(INSIDE);

	if (!strncmp(url, "file://", 7) || strchr(url, ':'))
		FUZZ_ASSERT(!path || path[0] == '/');
	else
		FUZZ_ASSERT(path && !strcmp(path, url));
	if (!path || strncmp(path, INSIDE, n) || (path[n] && path[n] != '/')) {
		FUZZ_ASSERT(!strcmp(out, url));
	} else {
		moved = gitlocal_path(out);
		FUZZ_ASSERT(moved && !strncmp(moved, HOST, strlen(HOST)) &&
			    !strcmp(moved + strlen(HOST), path + n));
		FUZZ_ASSERT(!strncmp(out, "file://", 7) == !strncmp(url, "file://", 7));
		free(moved);
	}
	free(out);
	free(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (size < 16)
		return 0;
	check_v4(data);
	addrclass_v6(data);
	s = fuzz_str(data + 16, size - 16);
	check_rebase(s);
	free(s);
	return 0;
}
