/* Address classes for checkout's network policy (see addrclass.h), from IANA's IPv4 and IPv6
 * special-purpose address registries. */
#include "addrclass.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>

struct range4 {
	uint32_t net;
	unsigned bits;
	enum addr_class c;
};

/* Most specific first where ranges nest (255.255.255.255 inside 240/4). */
static const struct range4 v4_ranges[] = {
    {0x00000000, 8, ADDR_UNSPECIFIED}, /* "this network" */
    {0x0a000000, 8, ADDR_PRIVATE},     /* RFC 1918 */
    {0x64400000, 10, ADDR_CGNAT},      /* RFC 6598 */
    {0x7f000000, 8, ADDR_LOOPBACK},    {0xa9fe0000, 16, ADDR_LINK_LOCAL},
    {0xac100000, 12, ADDR_PRIVATE},  /* RFC 1918 */
    {0xc0000000, 24, ADDR_RESERVED}, /* IETF protocol assignments */
    {0xc0000200, 24, ADDR_RESERVED}, /* TEST-NET-1 */
    {0xc0586300, 24, ADDR_RESERVED}, /* 6to4 relay anycast */
    {0xc0a80000, 16, ADDR_PRIVATE},  /* RFC 1918 */
    {0xc6120000, 15, ADDR_RESERVED}, /* benchmarking */
    {0xc6336400, 24, ADDR_RESERVED}, /* TEST-NET-2 */
    {0xcb007100, 24, ADDR_RESERVED}, /* TEST-NET-3 */
    {0xe0000000, 4, ADDR_MULTICAST},   {0xffffffff, 32, ADDR_BROADCAST},
    {0xf0000000, 4, ADDR_RESERVED}, /* future use */
};

enum addr_class addrclass_v4(uint32_t addr)
{
	uint32_t a = ntohl(addr);

	for (size_t i = 0; i < sizeof(v4_ranges) / sizeof(v4_ranges[0]); i++) {
		uint32_t mask = ~0u << (32 - v4_ranges[i].bits);

		if ((a & mask) == v4_ranges[i].net)
			return v4_ranges[i].c;
	}
	return ADDR_PUBLIC;
}

static uint32_t v4_at(const uint8_t *p)
{
	uint32_t a;

	memcpy(&a, p, 4);
	return a;
}

static int prefix_is(const uint8_t *addr, const uint8_t *prefix, unsigned bits)
{
	unsigned whole = bits / 8, rest = bits % 8;

	if (memcmp(addr, prefix, whole))
		return 0;
	return rest == 0 || ((addr[whole] ^ prefix[whole]) & (0xff << (8 - rest))) == 0;
}

enum addr_class addrclass_v6(const uint8_t addr[16])
{
	/* prefixes padded to 16 bytes: prefix_is may read the byte after the whole ones */
	static const uint8_t zero[16],
	    mapped[16] = {[10] = 0xff, [11] = 0xff}, nat64[16] = {0x00, 0x64, 0xff, 0x9b},
	    six_to_four[16] = {0x20, 0x02}, doc[16] = {0x20, 0x01, 0x0d, 0xb8},
	    doc2[16] = {0x3f, 0xff}, ietf[16] = {0x20, 0x01};

	if (!memcmp(addr, zero, 16))
		return ADDR_UNSPECIFIED;
	if (!memcmp(addr, zero, 15) && addr[15] == 1)
		return ADDR_LOOPBACK;
	if (prefix_is(addr, mapped, 96) || prefix_is(addr, nat64, 96))
		return addrclass_v4(v4_at(addr + 12));
	if (prefix_is(addr, six_to_four, 16))
		return addrclass_v4(v4_at(addr + 2));
	if (addr[0] == 0xff)
		return ADDR_MULTICAST;
	if ((addr[0] & 0xfe) == 0xfc)
		return ADDR_PRIVATE; /* unique local, fc00::/7 */
	if (addr[0] == 0xfe && (addr[1] & 0xc0) == 0x80)
		return ADDR_LINK_LOCAL;
	/* Only global unicast (2000::/3) is public, less its special blocks: IETF protocol
	 * assignments with Teredo (2001::/23), documentation (2001:db8::/32, 3fff::/20). */
	if ((addr[0] & 0xe0) != 0x20 || prefix_is(addr, ietf, 23) || prefix_is(addr, doc, 32) ||
	    prefix_is(addr, doc2, 20))
		return ADDR_RESERVED;
	return ADDR_PUBLIC;
}

enum addr_class addrclass_of(const struct sockaddr *sa, socklen_t len)
{
	if (sa && sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in))
		return addrclass_v4(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
	if (sa && sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6))
		return addrclass_v6(((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr);
	return ADDR_RESERVED;
}
