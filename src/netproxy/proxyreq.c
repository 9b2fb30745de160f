/* Parsing what a proxy client sends (see proxyreq.h). Strict where leniency would let one
 * request mean two things to two parsers: no folded headers, no stray CR or control bytes, one
 * Host, no userinfo in a URL; hop-by-hop and Proxy- headers stay here. */
#include "proxyreq.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "xmalloc.h"

long http_head_len(const char *buf, size_t len)
{
	size_t lim = len < HTTP_HEAD_MAX ? len : HTTP_HEAD_MAX;

	for (size_t i = 0; i + 1 < lim; i++) {
		if (buf[i] != '\n')
			continue;
		if (buf[i + 1] == '\n')
			return (long)(i + 2);
		if (buf[i + 1] == '\r' && i + 2 < lim && buf[i + 2] == '\n')
			return (long)(i + 3);
	}
	return len >= HTTP_HEAD_MAX ? -EMSGSIZE : 0;
}

static bool tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* No control byte but a tab; no DEL. */
static bool clean(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (((unsigned char)s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f)
			return false;
	return true;
}

/* "host:port", "[v6]:port", or without a port when dflt is not 0. */
static int parse_authority(const char *s, size_t len, unsigned dflt, char *host, unsigned *port)
{
	const char *hs = s, *colon = NULL;
	size_t hlen = len;
	unsigned long p;
	char *end, num[8];

	if (len && s[0] == '[') {
		const char *close = memchr(s, ']', len);

		if (!close)
			return -EINVAL;
		hs = s + 1;
		hlen = (size_t)(close - hs);
		if (close + 1 < s + len && close[1] != ':')
			return -EINVAL;
		if (close + 1 < s + len)
			colon = close + 1;
	} else if ((colon = memchr(s, ':', len))) {
		hlen = (size_t)(colon - s);
	}
	if (hlen == 0 || hlen > NETPOLICY_HOST_MAX || memchr(hs, '@', hlen))
		return -EINVAL;
	memcpy(host, hs, hlen);
	host[hlen] = '\0';
	if (!netpolicy_host_ok(host))
		return -EINVAL;
	if (!colon) {
		*port = dflt;
		return dflt ? 0 : -EINVAL;
	}
	len = (size_t)(s + len - colon - 1);
	if (len == 0 || len >= sizeof(num))
		return -EINVAL;
	memcpy(num, colon + 1, len);
	num[len] = '\0';
	p = strtoul(num, &end, 10);
	if (*end || num[0] < '0' || num[0] > '9' || p == 0 || p > 65535)
		return -EINVAL;
	*port = (unsigned)p;
	return 0;
}

struct out {
	char *buf;
	size_t len, cap;
};

static void put(struct out *o, const char *s, size_t n)
{
	while (o->len + n + 1 > o->cap)
		o->buf = xrealloc(o->buf, o->cap = o->cap ? o->cap * 2 : 1024);
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

/* A header's value: what follows its colon up to the line's end, without the blanks around
 * it. Its length, *v its start. */
static size_t header_value(const char *colon, const char *end, const char **v)
{
	size_t vlen;

	*v = colon + 1;
	vlen = (size_t)(end - *v);
	while (vlen && (**v == ' ' || **v == '\t'))
		(*v)++, vlen--;
	while (vlen && ((*v)[vlen - 1] == ' ' || (*v)[vlen - 1] == '\t'))
		vlen--;
	return vlen;
}

static bool header_is(const char *line, size_t nlen, const char *name)
{
	return strlen(name) == nlen && !strncasecmp(line, name, nlen);
}

/* The headers after the request line: Host checked against the URL, the rest copied but for
 * the hop-by-hop ones (Connection, Keep-Alive) and those meant for a proxy (Proxy-*). */
static int copy_headers(const char *p, const char *end, struct http_req *r, struct out *o)
{
	bool seen_host = false;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *colon, *v;
		size_t len = (size_t)((nl ? nl : end) - p), nlen, vlen;

		if (len && p[len - 1] == '\r')
			len--;
		if (len == 0)
			break; /* the blank line */
		if (!clean(p, len) || p[0] == ' ' || p[0] == '\t')
			return -EINVAL;
		colon = memchr(p, ':', len);
		if (!colon || colon == p)
			return -EINVAL;
		nlen = (size_t)(colon - p);
		for (size_t i = 0; i < nlen; i++)
			if (!tchar(p[i]))
				return -EINVAL;
		vlen = header_value(colon, p + len, &v);
		if (header_is(p, nlen, "host")) {
			char host[NETPOLICY_HOST_MAX + 1];
			unsigned port;

			if (seen_host)
				return -EINVAL;
			seen_host = true;
			if (parse_authority(v, vlen, 80, host, &port) < 0 ||
			    strcmp(host, r->host) || port != r->port)
				return -EPERM;
		} else if (!header_is(p, nlen, "connection") && !header_is(p, nlen, "keep-alive") &&
			   (nlen < 6 || strncasecmp(p, "proxy-", 6))) {
			put(o, p, len);
			put(o, "\r\n", 2);
		}
		p = nl ? nl + 1 : end;
	}
	put(o, "Connection: close\r\n\r\n", 21);
	return 0;
}

static int parse_plain(const char *method, size_t mlen, const char *target, size_t tlen,
		       const char *version, const char *rest, const char *end, struct http_req *r)
{
	const char *auth, *path;
	struct out o = {0};
	char hostline[NETPOLICY_HOST_MAX + 32];
	bool v6;
	int rc;

	if (tlen >= 8 && !strncasecmp(target, "https://", 8))
		return -EPROTONOSUPPORT;
	if (tlen < 7 || strncasecmp(target, "http://", 7))
		return -EPROTONOSUPPORT;
	auth = target + 7;
	path = auth;
	while (path < target + tlen && *path != '/' && *path != '?' && *path != '#')
		path++;
	if (parse_authority(auth, (size_t)(path - auth), 80, r->host, &r->port) < 0)
		return -EINVAL;
	put(&o, method, mlen);
	put(&o, " ", 1);
	if (path == target + tlen || *path != '/')
		put(&o, "/", 1);
	put(&o, path, (size_t)(target + tlen - path));
	put(&o, " ", 1);
	put(&o, version, 8);
	put(&o, "\r\n", 2);
	v6 = strchr(r->host, ':') != NULL;
	if (r->port == 80)
		snprintf(hostline, sizeof(hostline), "Host: %s%s%s\r\n", v6 ? "[" : "", r->host,
			 v6 ? "]" : "");
	else
		snprintf(hostline, sizeof(hostline), "Host: %s%s%s:%u\r\n", v6 ? "[" : "", r->host,
			 v6 ? "]" : "", r->port);
	put(&o, hostline, strlen(hostline));
	if ((rc = copy_headers(rest, end, r, &o)) < 0) {
		free(o.buf);
		return rc;
	}
	r->forward = o.buf;
	r->forward_len = o.len;
	return 0;
}

int http_parse(const char *head, size_t len, struct http_req *r)
{
	const char *end = head + len, *nl = memchr(head, '\n', len), *sp1, *sp2;
	size_t llen, mlen;

	*r = (struct http_req){0};
	if (!nl)
		return -EINVAL;
	llen = (size_t)(nl - head);
	if (llen && head[llen - 1] == '\r')
		llen--;
	if (!clean(head, llen) || memchr(head, '\t', llen))
		return -EINVAL;
	sp1 = memchr(head, ' ', llen);
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(head + llen - sp1 - 1)) : NULL;
	if (!sp1 || !sp2 || sp1 == head || sp2 == sp1 + 1 || head + llen - sp2 - 1 != 8 ||
	    (memcmp(sp2 + 1, "HTTP/1.1", 8) && memcmp(sp2 + 1, "HTTP/1.0", 8)))
		return -EINVAL;
	mlen = (size_t)(sp1 - head);
	for (size_t i = 0; i < mlen; i++)
		if (!tchar(head[i]))
			return -EINVAL;
	if (mlen == 7 && !memcmp(head, "CONNECT", 7)) {
		r->connect = true;
		return parse_authority(sp1 + 1, (size_t)(sp2 - sp1 - 1), 0, r->host, &r->port);
	}
	return parse_plain(head, mlen, sp1 + 1, (size_t)(sp2 - sp1 - 1), sp2 + 1, nl + 1, end, r);
}

static int b64_value(char c)
{
	static const char digits[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = c ? strchr(digits, c) : NULL;

	return p ? (int)(p - digits) : -1;
}

/* Standard base64 with its padding into out (at most cap bytes): the length, or -EINVAL. */
static long b64_decode(const char *in, size_t len, char *out, size_t cap)
{
	size_t o = 0, pad = 0;

	if (len == 0 || len % 4)
		return -EINVAL;
	while (pad < 2 && in[len - 1 - pad] == '=')
		pad++;
	for (size_t i = 0; i < len; i += 4) {
		int v[4];
		uint32_t w = 0;

		for (int k = 0; k < 4; k++) {
			bool padding = i + (size_t)k >= len - pad;

			v[k] = padding ? 0 : b64_value(in[i + (size_t)k]);
			if (v[k] < 0 || (padding && i + 4 < len))
				return -EINVAL;
			w = w << 6 | (uint32_t)v[k];
		}
		for (int k = 0; k < 3; k++) {
			if (i + 4 == len && k >= 3 - (int)pad)
				break;
			if (o == cap)
				return -EINVAL;
			out[o++] = (char)(w >> (16 - 8 * k));
		}
	}
	return (long)o;
}

/* The value of one Proxy-Authorization header: Basic, user PROXY_USER, the password out. */
static int basic_credential(const char *v, size_t vlen, char pass[PROXY_CRED_MAX + 1])
{
	char plain[PROXY_CRED_MAX + sizeof(PROXY_USER) + 1];
	size_t ulen = strlen(PROXY_USER);
	long n;

	if (vlen < 6 || strncasecmp(v, "Basic ", 6))
		return -EINVAL;
	v += 6, vlen -= 6;
	while (vlen && *v == ' ')
		v++, vlen--;
	n = b64_decode(v, vlen, plain, sizeof(plain));
	if (n < (long)ulen + 1 || memcmp(plain, PROXY_USER, ulen) || plain[ulen] != ':' ||
	    memchr(plain, '\0', (size_t)n) || (size_t)n - ulen - 1 > PROXY_CRED_MAX)
		return -EINVAL;
	memcpy(pass, plain + ulen + 1, (size_t)n - ulen - 1);
	pass[n - (long)ulen - 1] = '\0';
	return 0;
}

int http_credential(const char *head, size_t len, char pass[PROXY_CRED_MAX + 1])
{
	const char *p = memchr(head, '\n', len), *end = head + len;
	int rc = -ENOENT;

	for (p = p ? p + 1 : end; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *colon, *v;
		size_t llen = (size_t)((nl ? nl : end) - p), vlen;

		if (llen && p[llen - 1] == '\r')
			llen--;
		if (llen == 0)
			break;
		colon = memchr(p, ':', llen);
		if (colon && header_is(p, (size_t)(colon - p), "proxy-authorization")) {
			if (rc != -ENOENT)
				return -EINVAL; /* twice: which one is meant? */
			vlen = header_value(colon, p + llen, &v);
			if ((rc = basic_credential(v, vlen, pass)) < 0)
				return rc;
		}
		p = nl ? nl + 1 : end;
	}
	return rc;
}

long socks_greeting_len(const uint8_t *buf, size_t len)
{
	if (len >= 1 && buf[0] != 5)
		return -EINVAL;
	if (len < 2)
		return 0;
	if (buf[1] == 0)
		return -EINVAL;
	if (len < 2u + buf[1])
		return 0;
	return memchr(buf + 2, 2, buf[1]) ? 2 + buf[1] : -EACCES;
}

long socks_auth(const uint8_t *buf, size_t len, char pass[PROXY_CRED_MAX + 1])
{
	size_t ulen, plen;

	if (len >= 1 && buf[0] != 1)
		return -EINVAL;
	if (len < 2)
		return 0;
	ulen = buf[1];
	if (len < 3 + ulen)
		return 0;
	plen = buf[2 + ulen];
	if (len < 3 + ulen + plen)
		return 0;
	if (ulen != strlen(PROXY_USER) || memcmp(buf + 2, PROXY_USER, ulen) ||
	    memchr(buf + 3 + ulen, '\0', plen))
		return -EINVAL;
	memcpy(pass, buf + 3 + ulen, plen);
	pass[plen] = '\0';
	return (long)(3 + ulen + plen);
}

long socks_request(const uint8_t *buf, size_t len, char host[NETPOLICY_HOST_MAX + 1],
		   unsigned *port)
{
	size_t need, alen;

	if (len >= 1 && buf[0] != 5)
		return -1;
	if (len < 4)
		return 0;
	if (buf[2] != 0)
		return -1;
	if (buf[1] != 1)
		return -7;
	switch (buf[3]) {
	case 1:
		alen = 4;
		break;
	case 4:
		alen = 16;
		break;
	case 3:
		if (len < 5)
			return 0;
		alen = 1u + buf[4];
		if (buf[4] == 0 || buf[4] > NETPOLICY_HOST_MAX)
			return -1;
		break;
	default:
		return -8;
	}
	need = 4 + alen + 2;
	if (len < need)
		return 0;
	if (buf[3] == 3) {
		memcpy(host, buf + 5, buf[4]);
		host[buf[4]] = '\0';
		if (memchr(host, '\0', buf[4]) || !netpolicy_host_ok(host))
			return -1;
	} else if (!inet_ntop(buf[3] == 1 ? AF_INET : AF_INET6, buf + 4, host,
			      NETPOLICY_HOST_MAX + 1)) {
		return -1;
	}
	*port = (unsigned)buf[need - 2] << 8 | buf[need - 1];
	return *port ? (long)need : -1;
}
