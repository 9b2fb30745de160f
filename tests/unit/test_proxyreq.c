/* Unit tests: what sbxfs-netproxy parses from the sandbox (src/netproxy/proxyreq.c), abuse
 * first: head limits, CONNECT and plain requests, the forwarded head (origin form, Host,
 * hop-by-hop and Proxy- headers dropped, Connection: close), smuggling shapes refused (folded
 * headers, two Hosts, a Host that disagrees, bare CR, userinfo, https:// in a plain request),
 * and SOCKS5 greetings and requests of every address type, short and malformed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "proxyreq.h"

static int parse(const char *head, struct http_req *r)
{
	return http_parse(head, strlen(head), r);
}

static void test_head_len(void)
{
	char *big = malloc(HTTP_HEAD_MAX + 10);

	CHECK(http_head_len("GET / HTTP/1.1\r\n", 16) == 0);
	CHECK(http_head_len("GET / HTTP/1.1\r\n\r\nbody", 22) == 18);
	CHECK(http_head_len("GET / HTTP/1.1\n\nbody", 20) == 16);
	memset(big, 'a', HTTP_HEAD_MAX + 10);
	CHECK(http_head_len(big, HTTP_HEAD_MAX + 10) == -EMSGSIZE);
	CHECK(http_head_len(big, 100) == 0);
	free(big);
}

static void test_connect(void)
{
	struct http_req r;

	CHECK(parse("CONNECT Registry.Example:443 HTTP/1.1\r\nHost: x\r\n\r\n", &r) == 0);
	CHECK(r.connect && !strcmp(r.host, "registry.example") && r.port == 443 && !r.forward);
	CHECK(parse("CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n", &r) == 0);
	CHECK(!strcmp(r.host, "2001:db8::1") && r.port == 8443);
	CHECK(parse("CONNECT a.example HTTP/1.1\r\n\r\n", &r) == -EINVAL); /* no port */
	CHECK(parse("CONNECT a.example:0 HTTP/1.1\r\n\r\n", &r) == -EINVAL);
	CHECK(parse("CONNECT a.example:99999 HTTP/1.1\r\n\r\n", &r) == -EINVAL);
	CHECK(parse("CONNECT user@a.example:443 HTTP/1.1\r\n\r\n", &r) == -EINVAL);
	CHECK(parse("CONNECT a.example:443 HTTP/2.0\r\n\r\n", &r) == -EINVAL);
	CHECK(parse("CONNECT  a.example:443 HTTP/1.1\r\n\r\n", &r) == -EINVAL);
	CHECK(parse("CONNECT a.example:443\tHTTP/1.1\r\n\r\n", &r) == -EINVAL);
	CHECK(parse("CONNECT a\x01.example:443 HTTP/1.1\r\n\r\n", &r) == -EINVAL);
	CHECK(parse("no newline", &r) == -EINVAL);
}

static void test_plain(void)
{
	struct http_req r;
	const char *want = "GET /p/q?x=1 HTTP/1.1\r\nHost: a.example\r\nAccept: */*\r\n"
			   "Connection: close\r\n\r\n";

	CHECK(parse("GET http://A.example/p/q?x=1 HTTP/1.1\r\nHost: a.example:80\r\n"
		    "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\n"
		    "Accept: */*\r\nConnection: keep-alive\r\nKeep-Alive: 5\r\n\r\n",
		    &r) == 0);
	CHECK(!r.connect && r.port == 80 && r.forward && r.forward_len == strlen(want));
	CHECK(r.forward && !memcmp(r.forward, want, r.forward_len));
	free(r.forward);
	CHECK(parse("POST http://[2001:db8::1]:8080 HTTP/1.0\nContent-Length: 3\n\n", &r) == 0);
	CHECK(r.port == 8080 &&
	      !strncmp(r.forward, "POST / HTTP/1.0\r\nHost: [2001:db8::1]:8080\r\n", 42));
	free(r.forward);
	CHECK(parse("GET http://a.example?x HTTP/1.1\r\n\r\n", &r) == 0);
	CHECK(!strncmp(r.forward, "GET /?x HTTP/1.1\r\n", 18));
	free(r.forward);
	CHECK(parse("GET https://a.example/ HTTP/1.1\r\n\r\n", &r) == -EPROTONOSUPPORT);
	CHECK(parse("GET ftp://a.example/ HTTP/1.1\r\n\r\n", &r) == -EPROTONOSUPPORT);
	CHECK(parse("GET /relative HTTP/1.1\r\nHost: a.example\r\n\r\n", &r) == -EPROTONOSUPPORT);
	CHECK(parse("GET http://a.example/ HTTP/1.1\r\nHost: b.example\r\n\r\n", &r) == -EPERM);
	CHECK(parse("GET http://a.example/ HTTP/1.1\r\nHost: a.example:81\r\n\r\n", &r) == -EPERM);
	CHECK(parse("GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\nHost: a.example\r\n\r\n",
		    &r) == -EINVAL);
	CHECK(parse("GET http://a.example/ HTTP/1.1\r\nX: 1\r\n folded\r\n\r\n", &r) == -EINVAL);
	CHECK(parse("GET http://a.example/ HTTP/1.1\r\nX : 1\r\n\r\n", &r) == -EINVAL);
	CHECK(parse("GET http://a.example/ HTTP/1.1\r\nX: a\rb\r\n\r\n", &r) == -EINVAL);
	CHECK(parse("GET http://a.example/ HTTP/1.1\r\nno colon\r\n\r\n", &r) == -EINVAL);
	CHECK(parse("GET http://u:p@a.example/ HTTP/1.1\r\n\r\n", &r) == -EINVAL);
	CHECK(parse("G(T http://a.example/ HTTP/1.1\r\n\r\n", &r) == -EINVAL);
	CHECK(parse("GET http:// HTTP/1.1\r\n\r\n", &r) == -EINVAL);
	CHECK(parse("GET http://a..example/ HTTP/1.1\r\n\r\n", &r) == -EINVAL);
}

static void test_socks(void)
{
	char host[NETPOLICY_HOST_MAX + 1];
	unsigned port;
	const uint8_t dom[] = {5, 1, 0, 3, 9, 'a', '.', 'e', 'x', 'a', 'm', 'p', 'l', 'e', 1, 0xbb};
	const uint8_t v4[] = {5, 1, 0, 1, 198, 51, 100, 10, 0, 80};
	const uint8_t v6[] = {5, 1, 0, 4, 0x20, 1, 0xd, 0xb8, 0, 0, 0,
			      0, 0, 0, 0, 0,	0, 0,	0,    1, 0, 1};
	const uint8_t bind[] = {5, 2, 0, 1, 1, 2, 3, 4, 0, 80};
	const uint8_t atyp[] = {5, 1, 0, 9, 1, 2, 3, 4, 0, 80};
	const uint8_t zero_port[] = {5, 1, 0, 1, 1, 2, 3, 4, 0, 0};
	const uint8_t nul[] = {5, 1, 0, 3, 3, 'a', 0, 'b', 0, 80};
	const uint8_t empty[] = {5, 1, 0, 3, 0, 0, 80};

	CHECK(socks_greeting_len((const uint8_t *)"\x05", 1) == 0);
	CHECK(socks_greeting_len((const uint8_t *)"\x05\x02\x02", 3) == 0);
	/* only the username and password method (2) is taken: a session's credential */
	CHECK(socks_greeting_len((const uint8_t *)"\x05\x02\x02\x00", 4) == 4);
	CHECK(socks_greeting_len((const uint8_t *)"\x05\x01\x02", 3) == 3);
	CHECK(socks_greeting_len((const uint8_t *)"\x05\x01\x00", 3) == -EACCES);
	CHECK(socks_greeting_len((const uint8_t *)"\x04\x01\x00", 3) == -EINVAL);
	CHECK(socks_greeting_len((const uint8_t *)"\x05\x00", 2) == -EINVAL);
	CHECK(socks_request(dom, sizeof(dom), host, &port) == (long)sizeof(dom));
	CHECK(!strcmp(host, "a.example") && port == 443);
	for (size_t n = 0; n < sizeof(dom); n++)
		CHECK(socks_request(dom, n, host, &port) == 0);
	CHECK(socks_request(v4, sizeof(v4), host, &port) == (long)sizeof(v4));
	CHECK(!strcmp(host, "198.51.100.10") && port == 80);
	CHECK(socks_request(v6, sizeof(v6), host, &port) == (long)sizeof(v6));
	CHECK(!strcmp(host, "2001:db8::1") && port == 1);
	CHECK(socks_request(bind, sizeof(bind), host, &port) == -7);
	CHECK(socks_request(atyp, sizeof(atyp), host, &port) == -8);
	CHECK(socks_request(zero_port, sizeof(zero_port), host, &port) == -1);
	CHECK(socks_request(nul, sizeof(nul), host, &port) == -1);
	CHECK(socks_request(empty, sizeof(empty), host, &port) == -1);
	CHECK(socks_request((const uint8_t *)"\x04\x01\x00\x01", 4, host, &port) == -1);
}

static void test_socks_auth(void)
{
	const uint8_t ok[] = "\x01\x05sbxfs\x04" "abcd", other[] = "\x01\x04root\x04" "abcd";
	const uint8_t nul[] = "\x01\x05sbxfs\x03" "a\0b", ver[] = "\x05\x05sbxfs\x00";
	char pass[PROXY_CRED_MAX + 1];

	CHECK(socks_auth(ok, sizeof(ok) - 1, pass) == 12 && !strcmp(pass, "abcd"));
	for (size_t n = 0; n < sizeof(ok) - 1; n++)
		CHECK(socks_auth(ok, n, pass) == 0);
	CHECK(socks_auth(other, sizeof(other) - 1, pass) == -EINVAL);
	CHECK(socks_auth(nul, sizeof(nul) - 1, pass) == -EINVAL);
	CHECK(socks_auth(ver, sizeof(ver) - 1, pass) == -EINVAL);
}

static int cred(const char *head, char *pass)
{
	return http_credential(head, strlen(head), pass);
}

static void test_http_credential(void)
{
	char pass[PROXY_CRED_MAX + 1];

	/* sbxfs:s3cret, sbxfs:, root:x, sbxfs:a:b */
	CHECK(cred("CONNECT a:1 HTTP/1.1\r\nProxy-Authorization: Basic c2J4ZnM6czNjcmV0\r\n\r\n",
		   pass) == 0 &&
	      !strcmp(pass, "s3cret"));
	CHECK(cred("GET http://a/ HTTP/1.1\nproxy-authorization:basic   c2J4ZnM6\n\n", pass) == 0 &&
	      !strcmp(pass, ""));
	CHECK(cred("GET http://a/ HTTP/1.1\r\nProxy-Authorization: Basic c2J4ZnM6YTpi\r\n\r\n",
		   pass) == 0 &&
	      !strcmp(pass, "a:b"));
	CHECK(cred("CONNECT a:1 HTTP/1.1\r\nHost: a\r\n\r\n", pass) == -ENOENT);
	CHECK(cred("CONNECT a:1 HTTP/1.1\r\nProxy-Authorization: Basic cm9vdDp4\r\n\r\n", pass) ==
	      -EINVAL);
	CHECK(cred("CONNECT a:1 HTTP/1.1\r\nProxy-Authorization: Bearer c2J4ZnM6czNjcmV0\r\n\r\n",
		   pass) == -EINVAL);
	CHECK(cred("CONNECT a:1 HTTP/1.1\r\nProxy-Authorization: Basic c2J4ZnM6czNjcmV0=\r\n\r\n",
		   pass) == -EINVAL); /* not a whole number of groups */
	CHECK(cred("CONNECT a:1 HTTP/1.1\r\nProxy-Authorization: Basic c2J4=nM6\r\n\r\n", pass) ==
	      -EINVAL); /* padding inside */
	CHECK(cred("CONNECT a:1 HTTP/1.1\r\nProxy-Authorization: Basic c2J4ZnM6czNjcmV0\r\n"
		   "Proxy-Authorization: Basic c2J4ZnM6b3RoZXI=\r\n\r\n",
		   pass) == -EINVAL); /* twice */
	/* a header line in the request line's place is not a header */
	CHECK(cred("Proxy-Authorization: Basic c2J4ZnM6czNjcmV0\r\n\r\n", pass) == -ENOENT);
}

int main(void)
{
	test_socks_auth();
	test_http_credential();
	test_head_len();
	test_connect();
	test_plain();
	test_socks();
	return check_done();
}
