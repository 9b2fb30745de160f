/* The sandbox's network policy: its text form (a `mode` line, `allow` and `deny` lines of
 * patterns), parsed the same way by the daemon (network/policy, the config keys) and by
 * sbxfs-netproxy (which decides each connection with it), and the decision for a name and port.
 * Every input here comes from outside: lines are bounded and checked character by character. */
#ifndef SBX_NETPOLICY_H
#define SBX_NETPOLICY_H

#include <stdbool.h>
#include <stddef.h>

enum net_mode { NET_NONE, NET_FILTERED, NET_HOST };

/* A host name or pattern: at most this long (a DNS name's 253, or an IPv6 literal's text). */
#define NETPOLICY_HOST_MAX 253
/* A line of the policy, without its newline. */
#define NETPOLICY_LINE_MAX 512
/* Rules of one policy. */
#define NETPOLICY_RULES_MAX 100000

/* Rule ports besides a number: 80 and 443 (none given), or any (":*"). */
#define NETRULE_PORT_WEB 0
#define NETRULE_PORT_ANY (-1)

struct netrule {
	char *host; /* lower case; a wildcard's without its "*."; "" for "*" (any host) */
	bool wild;  /* "*.DOMAIN": names below DOMAIN, not DOMAIN itself */
	bool deny;
	bool priv; /* allow ... private: this rule's hosts may have non-public addresses */
	int port;  /* 1-65535, NETRULE_PORT_WEB or NETRULE_PORT_ANY */
};

struct netpolicy {
	enum net_mode mode;
	bool has_mode; /* the text had a mode line (a write without one keeps the mode) */
	struct netrule *rules;
	size_t n;
};

const char *net_mode_name(enum net_mode m);
int net_mode_parse(const char *s, size_t len, enum net_mode *m);

/* One line (no newline): "mode MODE", "allow PATTERN [private]", "deny PATTERN", a "#"
 * comment or blank. 0 and the rule or mode added to p (NULL: only checked), or -EINVAL with
 * a reason in err. */
int netpolicy_line(const char *line, size_t len, struct netpolicy *p, char *err, size_t errlen);
/* A whole text, all or nothing: 0, or -EINVAL (a bad line, named in err) or -E2BIG (more than
 * NETPOLICY_RULES_MAX rules) and p left empty. */
int netpolicy_parse(const char *text, size_t len, struct netpolicy *p, char *err, size_t errlen);
/* The text form: "mode MODE", then the rules in order; caller frees. */
char *netpolicy_render(const struct netpolicy *p, size_t *len);
/* One rule as its line ("allow *.example:8080 private"); caller frees. */
char *netrule_text(const struct netrule *r);
void netpolicy_free(struct netpolicy *p);

/* Whether host (a name or an address as a client gave it) may be reached on port: a matching
 * deny wins, else the first matching allow allows (the first with "private" if one has it);
 * *rule is the rule that decided (NULL: none matched, which denies). host must have passed
 * netpolicy_host_ok. */
bool netpolicy_decide(const struct netpolicy *p, const char *host, unsigned port,
		      const struct netrule **rule);
/* A host a client may ask for: a DNS name (letters, digits, '-', '_', dots), an IPv4 address,
 * or an IPv6 address without brackets; at most NETPOLICY_HOST_MAX bytes. Lowers it in place and
 * drops one trailing dot. */
bool netpolicy_host_ok(char *host);

#endif
