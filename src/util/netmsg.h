/* The daemon <-> sbxfs-netproxy protocol: fixed-size messages on a SOCK_SEQPACKET socketpair
 * (one message a packet), descriptors attached with SCM_RIGHTS. The daemon hands the proxy its
 * listening sockets (one per session or context, made in the sandbox's network namespace) and
 * the policy (a memfd with its text, which may be megabytes); the proxy answers with one record
 * per connection. Each side checks what it receives: the proxy parses what the sandbox sends,
 * so the daemon treats its records as untrusted too. */
#ifndef SBX_NETMSG_H
#define SBX_NETMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netpolicy.h"

enum netmsg_type {
	NETMSG_LISTEN = 1,   /* daemon: id, the secret, one fd attached: accept connections of
			      * listener id, whose session's requests carry that secret */
	NETMSG_UNLISTEN = 2, /* daemon: id: close it (connections under way go on) */
	NETMSG_POLICY = 3,   /* daemon: a memfd attached with the policy's text, and settings */
	NETMSG_CONN = 4,     /* proxy: a connection ended (or was refused) */
};

/* A session's proxy credential: user NETMSG_PROXY_USER (the same for all), and a password of
 * 32 hex digits (128 random bits) its own. */
#define NETMSG_PROXY_USER "sbxfs"
#define NETMSG_SECRET_LEN 32

struct netmsg_listen {
	char secret[NETMSG_SECRET_LEN + 1];
};

struct netmsg_policy {
	bool allow_private; /* [network] allow_private */
	uint32_t conns_max; /* connections at once per session (its credential) */
	uint32_t connect_timeout_ms;
};

enum netmsg_verdict { NETV_ALLOW = 1, NETV_DENY = 2, NETV_FAIL = 3 };

struct netmsg_conn {
	uint32_t listener;
	uint8_t verdict; /* enum netmsg_verdict: FAIL = allowed, but no connection was made */
	uint8_t proto;	 /* 'C' CONNECT, 'H' plain HTTP, 'S' SOCKS5, '-' never told */
	uint16_t port;
	uint64_t up, down; /* bytes from the client, and to it */
	uint32_t ms;	   /* from accept to close */
	char host[NETPOLICY_HOST_MAX + 1];
	char addr[48];			   /* the address connected to, "-" for none */
	char rule[NETPOLICY_LINE_MAX + 1]; /* the rule that decided, or why ("no rule") */
};

struct netmsg {
	uint32_t type;
	uint32_t id;
	union {
		struct netmsg_listen listen;
		struct netmsg_policy policy;
		struct netmsg_conn conn;
	} u;
};

/* Sends one message with fd attached (-1: none), waiting for room or not: 0 or -errno. */
int netmsg_send(int sock, const struct netmsg *m, int fd, bool wait);
/* Receives one message and its fd (-1 if none; extra fds are closed): 1, 0 at EOF, -EAGAIN,
 * or -EBADMSG for a packet of the wrong size or type. */
int netmsg_recv(int sock, struct netmsg *m, int *fd);
/* Whether a received CONN record's strings are NUL-terminated (they may hold any other byte:
 * the host is what the sandbox sent). */
bool netmsg_conn_ok(const struct netmsg_conn *c);

#endif
