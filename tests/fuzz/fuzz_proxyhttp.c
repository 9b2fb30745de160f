/* Fuzz target: an HTTP proxy request from the sandbox (src/netproxy/proxyreq.c). Properties:
 * a head's length is within the input and ends in a blank line; a parsed request names a host
 * the policy accepts as a host and a port in 1-65535; a plain request's forwarded head starts
 * with its method, holds no Proxy- header and no bare CR, names the same Host, ends with
 * "Connection: close" and a blank line, and parses again as a request (in origin form it is
 * not one for a proxy: it must be refused as malformed or not http://). A credential read from
 * a head is NUL-terminated within its bound, and only when the head has a Proxy-Authorization
 * header. */
#include <ctype.h>
#include <strings.h>

#include "fuzz.h"
#include "proxyreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	long head = http_head_len(buf, size);
	struct http_req r, again;
	char host[NETPOLICY_HOST_MAX + 1], pass[PROXY_CRED_MAX + 1];
	const char *tail = "Connection: close\r\n\r\n";

	FUZZ_ASSERT(head <= (long)size && head <= (long)HTTP_HEAD_MAX);
	if (head <= 0)
		return 0;
	FUZZ_ASSERT(buf[head - 1] == '\n');
	if (http_credential(buf, (size_t)head, pass) == 0) {
		/* the head's bytes in lower case (it may hold a NUL: no string functions) */
		char *h = malloc((size_t)head);

		for (long i = 0; i < head; i++)
			h[i] = (char)tolower((unsigned char)buf[i]);
		FUZZ_ASSERT(memchr(pass, '\0', sizeof(pass)) &&
			    memmem(h, (size_t)head, "proxy-authorization", 19));
		free(h);
	}
	if (http_parse(buf, (size_t)head, &r) < 0)
		return 0;
	snprintf(host, sizeof(host), "%s", r.host);
	FUZZ_ASSERT(netpolicy_host_ok(host) && !strcmp(host, r.host));
	FUZZ_ASSERT(r.port >= 1 && r.port <= 65535);
	FUZZ_ASSERT(r.connect == !r.forward);
	if (r.forward) {
		char *f = fuzz_str((const uint8_t *)r.forward, r.forward_len);
		const char *sp = memchr(buf, ' ', (size_t)head);
		size_t tl = strlen(tail);

		FUZZ_ASSERT(sp && !strncmp(f, buf, (size_t)(sp - buf)) && f[sp - buf] == ' ');
		FUZZ_ASSERT(!strcasestr(f, "\nproxy-"));
		FUZZ_ASSERT(r.forward_len >= tl && !strcmp(f + r.forward_len - tl, tail));
		for (const char *cr = strchr(f, '\r'); cr; cr = strchr(cr + 1, '\r'))
			FUZZ_ASSERT(cr[1] == '\n');
		FUZZ_ASSERT(http_head_len(f, r.forward_len) == (long)r.forward_len);
		FUZZ_ASSERT(http_parse(f, r.forward_len, &again) < 0);
		free(f);
	}
	free(r.forward);
	return 0;
}
