/* What a client of sbxfs-netproxy asks for, parsed from the bytes it sent (the sandbox's, so
 * attacker input): an HTTP proxy request head (CONNECT, or a plain request in absolute form)
 * and a SOCKS5 greeting and request. Pure functions over buffers, for the fuzzers. */
#ifndef SBX_PROXYREQ_H
#define SBX_PROXYREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netmsg.h"
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

/* A session's credential: the password of its proxy address (http://sbxfs:SECRET@...), at most
 * this many bytes, and the user name all sessions share. */
#define PROXY_CRED_MAX 255
#define PROXY_USER     NETMSG_PROXY_USER

/* The credential of a complete head: the password of its one Proxy-Authorization header of the
 * Basic scheme, for user PROXY_USER, into pass (NUL-terminated). 0, -ENOENT if there is none, or
 * -EINVAL for one that is malformed, of another scheme or user, or given twice. */
int http_credential(const char *head, size_t len, char pass[PROXY_CRED_MAX + 1]);

/* SOCKS5: the greeting's length (0: incomplete), -EINVAL if it is not SOCKS5, or -EACCES if
 * it does not offer the username and password method (RFC 1929), the only one taken. */
long socks_greeting_len(const uint8_t *buf, size_t len);
/* The username and password subnegotiation that follows it: its length (0: incomplete) with the
 * password in pass, or -EINVAL (malformed, or another user than PROXY_USER). */
long socks_auth(const uint8_t *buf, size_t len, char pass[PROXY_CRED_MAX + 1]);
/* A CONNECT request: its length (0: incomplete) with host and port set, or the reply code
 * to fail with, negated: -1 malformed, -7 not CONNECT, -8 an unknown address type. */
long socks_request(const uint8_t *buf, size_t len, char host[NETPOLICY_HOST_MAX + 1],
		   unsigned *port);

#endif
