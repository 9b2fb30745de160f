/* What a client of sbxfs-netproxy asks for, parsed from the bytes it sent (the sandbox's, so
 * attacker input): an HTTP proxy request head (CONNECT, or a plain request in absolute form)
 * and a SOCKS5 greeting and request. Pure functions over buffers, for the fuzzers. */
#ifndef SBX_PROXYREQ_H
#define SBX_PROXYREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netpolicy.h"

/* A request head's bytes at most, request line and headers with the blank line. */
#define HTTP_HEAD_MAX (32u << 10)

struct http_req {
	bool connect;			   /* CONNECT host:port: a tunnel */
	char host[NETPOLICY_HOST_MAX + 1]; /* checked with netpolicy_host_ok */
	unsigned port;
	char *forward; /* a plain request: the head to send upstream (caller frees) */
	size_t forward_len;
};

/* The length of the head in buf (through its blank line), 0 if it is not complete yet, or
 * -EMSGSIZE once more than HTTP_HEAD_MAX bytes hold none. */
long http_head_len(const char *buf, size_t len);
/* Parses a complete head. A CONNECT names host:port; any other method must use an absolute
 * http:// URL, whose host (and a Host header, if any, must agree) is the target, and gets
 * forward: the request line in origin form, the headers less the hop-by-hop and Proxy- ones,
 * with Host and "Connection: close". 0, or -EINVAL (malformed: 400), -EPROTONOSUPPORT (not
 * http://: 400, with that said) or -EPERM (Host disagrees with the URL). */
int http_parse(const char *head, size_t len, struct http_req *r);

/* SOCKS5: the greeting's length (0: incomplete), -EINVAL if it is not SOCKS5, or -EACCES if
 * it does not offer "no authentication". */
long socks_greeting_len(const uint8_t *buf, size_t len);
/* A CONNECT request: its length (0: incomplete) with host and port set, or the reply code
 * to fail with, negated: -1 malformed, -7 not CONNECT, -8 an unknown address type. */
long socks_request(const uint8_t *buf, size_t len, char host[NETPOLICY_HOST_MAX + 1],
		   unsigned *port);

#endif
