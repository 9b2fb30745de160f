/* Unit tests: checkout's address classes (addrclass.h), every range at its edges, IPv6 and
 * IPv4 embedded in IPv6. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "addrclass.h"
#include "check.h"

static enum addr_class of(const char *text)
{
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
	struct sockaddr_in s4 = {.sin_family = AF_INET};

	if (inet_pton(AF_INET, text, &s4.sin_addr) == 1)
		return addrclass_of((struct sockaddr *)&s4, sizeof(s4));
	if (inet_pton(AF_INET6, text, &s6.sin6_addr) == 1)
		return addrclass_of((struct sockaddr *)&s6, sizeof(s6));
	return (enum addr_class) - 1;
}

static void v4_ranges(void)
{
	CHECK(of("0.0.0.0") == ADDR_UNSPECIFIED);
	CHECK(of("0.255.255.255") == ADDR_UNSPECIFIED);
	CHECK(of("1.0.0.0") == ADDR_PUBLIC);
	CHECK(of("9.255.255.255") == ADDR_PUBLIC);
	CHECK(of("10.0.0.0") == ADDR_PRIVATE);
	CHECK(of("10.255.255.255") == ADDR_PRIVATE);
	CHECK(of("11.0.0.0") == ADDR_PUBLIC);
	CHECK(of("100.63.255.255") == ADDR_PUBLIC);
	CHECK(of("100.64.0.0") == ADDR_CGNAT);
	CHECK(of("100.127.255.255") == ADDR_CGNAT);
	CHECK(of("100.128.0.0") == ADDR_PUBLIC);
	CHECK(of("126.255.255.255") == ADDR_PUBLIC);
	CHECK(of("127.0.0.1") == ADDR_LOOPBACK);
	CHECK(of("127.255.255.254") == ADDR_LOOPBACK);
	CHECK(of("128.0.0.0") == ADDR_PUBLIC);
	CHECK(of("169.253.255.255") == ADDR_PUBLIC);
	CHECK(of("169.254.0.0") == ADDR_LINK_LOCAL);
	CHECK(of("169.254.169.254") == ADDR_LINK_LOCAL); /* cloud metadata */
	CHECK(of("169.255.0.0") == ADDR_PUBLIC);
	CHECK(of("172.15.255.255") == ADDR_PUBLIC);
	CHECK(of("172.16.0.0") == ADDR_PRIVATE);
	CHECK(of("172.31.255.255") == ADDR_PRIVATE);
	CHECK(of("172.32.0.0") == ADDR_PUBLIC);
	CHECK(of("192.0.0.0") == ADDR_RESERVED);
	CHECK(of("192.0.0.255") == ADDR_RESERVED);
	CHECK(of("192.0.1.0") == ADDR_PUBLIC);
	CHECK(of("192.0.2.1") == ADDR_RESERVED);
	CHECK(of("192.88.99.1") == ADDR_RESERVED);
	CHECK(of("192.167.255.255") == ADDR_PUBLIC);
	CHECK(of("192.168.0.0") == ADDR_PRIVATE);
	CHECK(of("192.168.255.255") == ADDR_PRIVATE);
	CHECK(of("192.169.0.0") == ADDR_PUBLIC);
	CHECK(of("198.17.255.255") == ADDR_PUBLIC);
	CHECK(of("198.18.0.0") == ADDR_RESERVED);
	CHECK(of("198.19.255.255") == ADDR_RESERVED);
	CHECK(of("198.20.0.0") == ADDR_PUBLIC);
	CHECK(of("198.51.100.7") == ADDR_RESERVED);
	CHECK(of("203.0.113.7") == ADDR_RESERVED);
	CHECK(of("203.0.114.0") == ADDR_PUBLIC);
	CHECK(of("223.255.255.255") == ADDR_PUBLIC);
	CHECK(of("224.0.0.0") == ADDR_MULTICAST);
	CHECK(of("239.255.255.255") == ADDR_MULTICAST);
	CHECK(of("240.0.0.0") == ADDR_RESERVED);
	CHECK(of("255.255.255.254") == ADDR_RESERVED);
	CHECK(of("255.255.255.255") == ADDR_BROADCAST);
	CHECK(of("8.8.8.8") == ADDR_PUBLIC);
	CHECK(of("140.82.121.4") == ADDR_PUBLIC);
}

static void v6_ranges(void)
{
	CHECK(of("::") == ADDR_UNSPECIFIED);
	CHECK(of("::1") == ADDR_LOOPBACK);
	CHECK(of("::2") == ADDR_RESERVED);
	CHECK(of("::8.8.8.8") == ADDR_RESERVED); /* IPv4-compatible, deprecated */
	CHECK(of("fc00::") == ADDR_PRIVATE);
	CHECK(of("fd12:3456::1") == ADDR_PRIVATE);
	CHECK(of("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff") == ADDR_PRIVATE);
	CHECK(of("fe80::1") == ADDR_LINK_LOCAL);
	CHECK(of("febf:ffff::1") == ADDR_LINK_LOCAL);
	CHECK(of("fec0::1") == ADDR_RESERVED); /* site-local, deprecated */
	CHECK(of("ff02::1") == ADDR_MULTICAST);
	CHECK(of("ff05::2") == ADDR_MULTICAST);
	CHECK(of("100::1") == ADDR_RESERVED);  /* discard */
	CHECK(of("2001::1") == ADDR_RESERVED); /* Teredo */
	CHECK(of("2001:1ff:ffff::1") == ADDR_RESERVED);
	CHECK(of("2001:200::1") == ADDR_PUBLIC);
	CHECK(of("2001:db8::1") == ADDR_RESERVED);
	CHECK(of("2001:db9::1") == ADDR_PUBLIC);
	CHECK(of("2606:4700:4700::1111") == ADDR_PUBLIC);
	CHECK(of("2a00:1450:4001:80b::200e") == ADDR_PUBLIC);
	CHECK(of("3ffe::1") == ADDR_PUBLIC);
	CHECK(of("3fff::1") == ADDR_RESERVED);
	CHECK(of("3fff:fff::1") == ADDR_RESERVED);
	CHECK(of("4000::1") == ADDR_RESERVED);
	CHECK(of("1fff:ffff::1") == ADDR_RESERVED);
}

static void v4_in_v6(void)
{
	CHECK(of("::ffff:127.0.0.1") == ADDR_LOOPBACK);
	CHECK(of("::ffff:10.1.2.3") == ADDR_PRIVATE);
	CHECK(of("::ffff:169.254.169.254") == ADDR_LINK_LOCAL);
	CHECK(of("::ffff:100.64.0.1") == ADDR_CGNAT);
	CHECK(of("::ffff:0.0.0.0") == ADDR_UNSPECIFIED);
	CHECK(of("::ffff:255.255.255.255") == ADDR_BROADCAST);
	CHECK(of("::ffff:224.0.0.1") == ADDR_MULTICAST);
	CHECK(of("::ffff:8.8.8.8") == ADDR_PUBLIC);
	CHECK(of("64:ff9b::127.0.0.1") == ADDR_LOOPBACK);
	CHECK(of("64:ff9b::192.168.1.1") == ADDR_PRIVATE);
	CHECK(of("64:ff9b::8.8.8.8") == ADDR_PUBLIC);
	CHECK(of("64:ff9b:1::8.8.8.8") == ADDR_RESERVED); /* local-use NAT64 */
	CHECK(of("2002:7f00:1::") == ADDR_LOOPBACK);	  /* 6to4 of 127.0.0.1 */
	CHECK(of("2002:a9fe:a9fe::1") == ADDR_LINK_LOCAL);
	CHECK(of("2002:0808:0808::1") == ADDR_PUBLIC);
}

static void other_families(void)
{
	struct sockaddr_in s4 = {.sin_family = AF_INET};
	struct sockaddr sa = {.sa_family = AF_UNIX};

	inet_pton(AF_INET, "8.8.8.8", &s4.sin_addr);
	CHECK(addrclass_of((struct sockaddr *)&s4, sizeof(s4)) == ADDR_PUBLIC);
	CHECK(addrclass_of((struct sockaddr *)&s4, sizeof(s4) - 1) == ADDR_RESERVED);
	CHECK(addrclass_of(&sa, sizeof(sa)) == ADDR_RESERVED);
	CHECK(addrclass_of(NULL, 0) == ADDR_RESERVED);
}

int main(void)
{
	v4_ranges();
	v6_ranges();
	v4_in_v6();
	other_families();
	return check_done();
}
