/* The network policy's text form and decisions (see netpolicy.h). Rules are matched in a
 * linear scan: 10,000 rules cost tens of microseconds per connection, less than the name's
 * resolution, and the order of the text is kept as written. */
#include "netpolicy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

static const char *const mode_names[] = {"none", "filtered", "host"};

const char *net_mode_name(enum net_mode m)
{
	return (unsigned)m < 3 ? mode_names[m] : "none";
}

int net_mode_parse(const char *s, size_t len, enum net_mode *m)
{
	for (int i = 0; i < 3; i++) {
		if (strlen(mode_names[i]) == len && !memcmp(s, mode_names[i], len)) {
			*m = (enum net_mode)i;
			return 0;
		}
	}
	return -EINVAL;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

/* An IPv6 literal in its one canonical text, so that rules and requests compare as text. */
static bool v6_canonical(char *host)
{
	struct in6_addr a;
	char buf[INET6_ADDRSTRLEN];

	if (inet_pton(AF_INET6, host, &a) != 1 || !inet_ntop(AF_INET6, &a, buf, sizeof(buf)))
		return false;
	strcpy(host, buf); /* never longer than the text it came from */
	return true;
}

bool netpolicy_host_ok(char *host)
{
	size_t len = strlen(host);

	if (len == 0 || len > NETPOLICY_HOST_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (host[i] >= 'A' && host[i] <= 'Z')
			host[i] = (char)(host[i] - 'A' + 'a');
	if (strchr(host, ':'))
		return v6_canonical(host);
	if (host[len - 1] == '.')
		host[--len] = '\0';
	if (len == 0 || host[0] == '.' || host[len - 1] == '.' || strstr(host, ".."))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!name_char(host[i]))
			return false;
	return true;
}

static int parse_port(const char *s, size_t len, int *port)
{
	unsigned v = 0;

	if (len == 1 && s[0] == '*') {
		*port = NETRULE_PORT_ANY;
		return 0;
	}
	if (len == 0 || len > 5)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -EINVAL;
	*port = (int)v;
	return 0;
}

/* "HOST", "*.DOMAIN", "*", "[V6]", each with an optional ":PORT" or ":*". */
static int parse_pattern(const char *s, size_t len, struct netrule *r)
{
	const char *host = s, *colon = NULL;
	size_t hlen = len;
	char buf[NETPOLICY_HOST_MAX + 1];

	r->port = NETRULE_PORT_WEB;
	if (len && s[0] == '[') {
		const char *close = memchr(s, ']', len);

		if (!close)
			return -EINVAL;
		host = s + 1;
		hlen = (size_t)(close - host);
		if (close + 1 < s + len) {
			if (close[1] != ':')
				return -EINVAL;
			colon = close + 1;
		}
	} else if ((colon = memchr(s, ':', len))) {
		hlen = (size_t)(colon - s);
	}
	if (colon && parse_port(colon + 1, (size_t)(s + len - colon - 1), &r->port) < 0)
		return -EINVAL;
	if (hlen == 1 && host[0] == '*') {
		r->wild = true;
		r->host = xstrdup("");
		return 0;
	}
	if (hlen > 2 && host[0] == '*' && host[1] == '.') {
		r->wild = true;
		host += 2;
		hlen -= 2;
	}
	if (hlen == 0 || hlen > NETPOLICY_HOST_MAX || memchr(host, '*', hlen))
		return -EINVAL;
	memcpy(buf, host, hlen);
	buf[hlen] = '\0';
	if (memchr(buf, '\0', hlen) || !netpolicy_host_ok(buf) || (r->wild && strchr(buf, ':')))
		return -EINVAL;
	r->host = xstrdup(buf);
	return 0;
}

/* The next word of [*p, end): spaces and tabs separate words. */
static size_t word(const char **p, const char *end, const char **w)
{
	const char *s = *p;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	*w = s;
	while (s < end && *s != ' ' && *s != '\t')
		s++;
	*p = s;
	return (size_t)(s - *w);
}

static int bad(char *err, size_t errlen, const char *why)
{
	snprintf(err, errlen, "%s", why);
	return -EINVAL;
}

int netpolicy_line(const char *line, size_t len, struct netpolicy *p, char *err, size_t errlen)
{
	const char *end = line + len, *pos = line, *verb, *arg, *extra;
	size_t vlen, alen, xlen;
	struct netrule r = {0};
	enum net_mode mode;

	if (len > NETPOLICY_LINE_MAX)
		return bad(err, errlen, "line too long");
	if (memchr(line, '\0', len))
		return bad(err, errlen, "NUL byte");
	if (len && line[len - 1] == '\r')
		end--; /* a file written on another system */
	vlen = word(&pos, end, &verb);
	if (vlen == 0 || verb[0] == '#')
		return 0;
	alen = word(&pos, end, &arg);
	xlen = word(&pos, end, &extra);
	if (vlen == 4 && !memcmp(verb, "mode", 4)) {
		if (xlen || net_mode_parse(arg, alen, &mode) < 0)
			return bad(err, errlen, "mode takes none, filtered or host");
		if (p) {
			p->mode = mode;
			p->has_mode = true;
		}
		return 0;
	}
	if (vlen == 4 && !memcmp(verb, "deny", 4))
		r.deny = true;
	else if (vlen != 5 || memcmp(verb, "allow", 5))
		return bad(err, errlen, "a line is mode, allow or deny");
	if (!alen)
		return bad(err, errlen, "a rule takes a pattern: HOST or *.DOMAIN, and :PORT");
	if (xlen && (r.deny || xlen != 7 || memcmp(extra, "private", 7))) {
		/* The word is the user's, bounded: NETPOLICY_LINE_MAX at most, cut at 40. */
		snprintf(err, errlen, "'%.*s': the only word after a pattern is private, on allow",
			 (int)(xlen < 40 ? xlen : 40), extra);
		return -EINVAL;
	}
	r.priv = xlen != 0;
	if (word(&pos, end, &extra))
		return bad(err, errlen, "too many words");
	if (parse_pattern(arg, alen, &r) < 0)
		return bad(err, errlen, "bad pattern: HOST, *.DOMAIN or *, with :PORT or :*");
	if (!p) {
		free(r.host);
		return 0;
	}
	if (p->n >= NETPOLICY_RULES_MAX) {
		free(r.host);
		snprintf(err, errlen, "more than %d rules", NETPOLICY_RULES_MAX);
		return -E2BIG;
	}
	if ((p->n & (p->n - 1)) == 0) /* grown at powers of two */
		p->rules = xrealloc(p->rules, (p->n ? p->n * 2 : 1) * sizeof(*p->rules));
	p->rules[p->n++] = r;
	return 0;
}

int netpolicy_parse(const char *text, size_t len, struct netpolicy *p, char *err, size_t errlen)
{
	const char *pos = text, *end = text + len;
	unsigned lineno = 1;
	char why[128];
	int rc;

	*p = (struct netpolicy){0};
	while (pos < end) {
		const char *nl = memchr(pos, '\n', (size_t)(end - pos));
		size_t n = nl ? (size_t)(nl - pos) : (size_t)(end - pos);

		if ((rc = netpolicy_line(pos, n, p, why, sizeof(why))) < 0) {
			snprintf(err, errlen, "line %u: %s", lineno, why);
			netpolicy_free(p);
			return rc;
		}
		pos += n + 1;
		lineno++;
	}
	return 0;
}

char *netrule_text(const struct netrule *r)
{
	char port[16] = "";
	bool v6 = strchr(r->host, ':') != NULL;

	if (r->port == NETRULE_PORT_ANY)
		strcpy(port, ":*");
	else if (r->port != NETRULE_PORT_WEB)
		snprintf(port, sizeof(port), ":%d", r->port);
	return xasprintf("%s %s%s%s%s%s%s", r->deny ? "deny" : "allow",
			 r->wild ? (r->host[0] ? "*." : "*") : "", v6 ? "[" : "", r->host,
			 v6 ? "]" : "", port, r->priv ? " private" : "");
}

char *netpolicy_render(const struct netpolicy *p, size_t *len)
{
	size_t cap = 64, n;
	char *out = xmalloc(cap);

	n = (size_t)snprintf(out, cap, "mode %s\n", net_mode_name(p->mode));
	for (size_t i = 0; i < p->n; i++) {
		char *line = netrule_text(&p->rules[i]);
		size_t l = strlen(line);

		while (n + l + 2 > cap)
			out = xrealloc(out, cap *= 2);
		memcpy(out + n, line, l);
		out[n + l] = '\n';
		n += l + 1;
		out[n] = '\0';
		free(line);
	}
	*len = n;
	return out;
}

void netpolicy_free(struct netpolicy *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->rules[i].host);
	free(p->rules);
	*p = (struct netpolicy){0};
}

static bool host_matches(const struct netrule *r, const char *host, size_t hlen)
{
	size_t rlen;

	if (!r->wild)
		return !strcmp(r->host, host);
	rlen = strlen(r->host);
	if (rlen == 0)
		return true;
	return hlen > rlen + 1 && host[hlen - rlen - 1] == '.' &&
	       !strcmp(host + hlen - rlen, r->host);
}

static bool port_matches(const struct netrule *r, unsigned port)
{
	if (r->port == NETRULE_PORT_ANY)
		return true;
	if (r->port == NETRULE_PORT_WEB)
		return port == 80 || port == 443;
	return (unsigned)r->port == port;
}

bool netpolicy_decide(const struct netpolicy *p, const char *host, unsigned port,
		      const struct netrule **rule)
{
	const struct netrule *allow = NULL;
	size_t hlen = strlen(host);

	for (size_t i = 0; i < p->n; i++) {
		const struct netrule *r = &p->rules[i];

		if (!host_matches(r, host, hlen) || !port_matches(r, port))
			continue;
		if (r->deny) {
			*rule = r;
			return false;
		}
		/* The first that matches; one with "private" over one without, so that a broad
		 * rule written before it does not take the host's own marker away. */
		if (!allow || (r->priv && !allow->priv))
			allow = r;
	}
	*rule = allow;
	return allow != NULL;
}
