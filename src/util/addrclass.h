/* Which kind of address a socket address is, for checkout's network policy: anything but a
 * public unicast address (loopback, private, link-local, ...) is refused by default. Pure
 * functions, so every range can be unit-tested. */
#ifndef SBX_ADDRCLASS_H
#define SBX_ADDRCLASS_H

#include <stdint.h>
#include <sys/socket.h>

enum addr_class {
	ADDR_PUBLIC,
	ADDR_UNSPECIFIED, /* 0.0.0.0/8, :: */
	ADDR_LOOPBACK,	  /* 127/8, ::1 */
	ADDR_PRIVATE,	  /* 10/8, 172.16/12, 192.168/16, fc00::/7 */
	ADDR_CGNAT,	  /* 100.64/10 */
	ADDR_LINK_LOCAL,  /* 169.254/16, fe80::/10 */
	ADDR_MULTICAST,	  /* 224/4, ff00::/8 */
	ADDR_BROADCAST,	  /* 255.255.255.255 */
	ADDR_RESERVED,	  /* documentation, benchmarking, 240/4, non-global IPv6, ... */
};

/* addr in network byte order. */
enum addr_class addrclass_v4(uint32_t addr);
/* IPv4-mapped (::ffff:0:0/96), NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses are
 * classed by the IPv4 address they stand for. */
enum addr_class addrclass_v6(const uint8_t addr[16]);
/* AF_INET or AF_INET6 of at least their size; anything else is ADDR_RESERVED. */
enum addr_class addrclass_of(const struct sockaddr *sa, socklen_t len);

#endif
