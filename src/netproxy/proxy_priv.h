/* What sbxfs-netproxy's files share: netproxy.c (the messages from the daemon, the listeners,
 * accepting), proxyconn.c (one connection: its request, decision, dial and relay) and
 * proxyfilter.c (its confinement). */
#ifndef SBX_PROXY_PRIV_H
#define SBX_PROXY_PRIV_H

#include <stdint.h>

#include "netmsg.h"
#include "netpolicy.h"

/* The policy and settings in force, shared by the connections that took it. */
struct policy_ref {
	int refs;
	struct netpolicy p;
	struct netmsg_policy set;
};

struct listener;

/* netproxy.c */
/* The policy in force, referenced. */
struct policy_ref *policy_get(void);
void policy_put(struct policy_ref *pr);
/* Sends a connection's record to the daemon; without wait, dropped if it lags. */
void proxy_report(const struct netmsg *m, bool wait);
/* A connection that came in on l ended: its count goes down. */
void listener_done(struct listener *l);
uint32_t listener_id(const struct listener *l);
/* The session whose credential pass is, for one more of its connections: 0 with *owner set
 * (release with listener_unclaim), -EACCES if pass is no session's, -EBUSY if that session has
 * connections_max already. */
int listener_claim(const char *pass, struct listener **owner);
void listener_unclaim(struct listener *l);
/* The policy's connections_max. */
unsigned listener_conns_max(void);

/* proxyconn.c: serves client fd of listener l on a thread of its own (fd closed, l's count
 * dropped and a record sent once it ends). 0, or -errno and nothing started. */
int conn_start(int fd, struct listener *l);

/* proxyfilter.c: resource limits, no core dumps or ptrace, and the seccomp filter: no exec,
 * no new processes (threads only), no files written, sockets of IP, Unix and netlink only.
 * 0 or -errno. */
int proxy_confine(unsigned fds_max);

#endif
