/* Fuzz target: the network policy's text (src/util/netpolicy.c), as network/policy and the
 * proxy read it. Properties: a text that parses renders to a text that parses to the same
 * render (a fixed point); every rule's line parses alone; a decision on any host the input
 * names is the same on the policy and on its rendered copy; a text that fails parses to
 * nothing. */
#include "fuzz.h"
#include "netpolicy.h"
#include "xmalloc.h"

static void same_decisions(const struct netpolicy *a, const struct netpolicy *b, char *host,
			   unsigned port)
{
	const struct netrule *ra, *rb;

	if (!netpolicy_host_ok(host))
		return;
	FUZZ_ASSERT(netpolicy_decide(a, host, port, &ra) == netpolicy_decide(b, host, port, &rb));
	FUZZ_ASSERT(!ra == !rb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct netpolicy p, q;
	char err[160], *text, *again, *host;
	size_t len, len2;
	unsigned port = size ? data[0] * 257u % 65536u : 80;

	if (netpolicy_parse((const char *)data, size, &p, err, sizeof(err)) < 0) {
		FUZZ_ASSERT(p.n == 0 && p.rules == NULL);
		return 0;
	}
	text = netpolicy_render(&p, &len);
	FUZZ_ASSERT(netpolicy_parse(text, len, &q, err, sizeof(err)) == 0);
	again = netpolicy_render(&q, &len2);
	FUZZ_ASSERT(fuzz_same(text, len, again, len2));
	for (size_t i = 0; i < p.n; i++) {
		char *line = netrule_text(&p.rules[i]);

		FUZZ_ASSERT(netpolicy_line(line, strlen(line), NULL, err, sizeof(err)) == 0);
		host = xstrdup(p.rules[i].host[0] ? p.rules[i].host : "x");
		same_decisions(&p, &q, host, port);
		free(host);
		host = xasprintf("a.%s", p.rules[i].host);
		same_decisions(&p, &q, host, port);
		free(host);
		free(line);
	}
	free(text);
	free(again);
	netpolicy_free(&p);
	netpolicy_free(&q);
	return 0;
}
