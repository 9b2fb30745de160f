/* Fuzz target: a SOCKS5 greeting, username and password, and request from the sandbox
 * (src/netproxy/proxyreq.c). Properties: lengths stay within the input; a greeting is accepted
 * only if it offers the username and password method; a password taken is as long as the
 * subnegotiation said; a request's host is one the policy accepts as a host, its port is not
 * 0, and a longer buffer (more bytes after it) parses to the same length, host and port. */
#include "fuzz.h"
#include "proxyreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char host[NETPOLICY_HOST_MAX + 1], host2[NETPOLICY_HOST_MAX + 1], copy[sizeof(host)];
	unsigned port = 0, port2 = 0;
	long g = socks_greeting_len(data, size), n;
	uint8_t *more;

	char pass[PROXY_CRED_MAX + 1];
	long a = socks_auth(data, size, pass);

	FUZZ_ASSERT(g <= (long)size && a <= (long)size);
	if (g > 0)
		FUZZ_ASSERT(memchr(data + 2, 2, (size_t)g - 2) != NULL);
	if (a > 0)
		FUZZ_ASSERT(strlen(pass) == data[2 + data[1]] && (long)strlen(pass) < a);
	n = socks_request(data, size, host, &port);
	FUZZ_ASSERT(n <= (long)size && n >= -8);
	if (n <= 0)
		return 0;
	FUZZ_ASSERT(port != 0);
	snprintf(copy, sizeof(copy), "%s", host);
	FUZZ_ASSERT(netpolicy_host_ok(copy));
	more = malloc(size + 4);
	memcpy(more, data, size);
	memset(more + size, 0xee, 4);
	FUZZ_ASSERT(socks_request(more, size + 4, host2, &port2) == n);
	FUZZ_ASSERT(!strcmp(host, host2) && port == port2);
	free(more);
	return 0;
}
