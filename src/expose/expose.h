/* Exposed ports (ports/): which TCP ports of the sandbox the host reaches, and where. Each one
 * is a listener on [network] expose_address at a free port, whose connections the relay
 * (expose_relay.h) carries into the sandbox's network namespace to 127.0.0.1:PORT. When the
 * sandbox has the host's network (network = host, isolation = none) its ports already are the
 * host's: an exposure is then only a record, its address the port itself on 127.0.0.1.
 * Thread-safe; never takes the core lock. */
#ifndef SBX_EXPOSE_H
#define SBX_EXPOSE_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "config.h"

/* Serials go from 1 to this and around again (they fit the 29 bits an inode number has for
 * them, fs/base/ino.h). */
#define EXPOSE_SERIAL_MAX ((1u << 29) - 1)

/* The longest name of an exposed port (its name file), in bytes. */
#define EXPOSE_NAME_MAX 128

struct expose_info {
	unsigned port;	 /* in the sandbox */
	uint32_t serial; /* this exposure's, never 0; a port exposed again gets a new one */
	char *name;	 /* "" if none */
	char address[INET6_ADDRSTRLEN]; /* where the host reaches it */
	unsigned host_port;
	bool relayed; /* false: the sandbox has the host's network */
	struct timespec created;
	unsigned active;   /* connections relayed now */
	uint64_t accepted; /* connections relayed since exposed */
	uint64_t refused;  /* connections reset: nothing listened inside, or the cap */
};

/* Reads the [network] keys; starts the relay unless the sandbox has the host's network. */
int expose_init(const struct config *cfg);
/* Closes every exposed port and its connections, ends the relay. */
void expose_shutdown(void);
/* "1" to "65535", written exactly (no sign, space or leading zero): 0 or -EINVAL. */
int expose_parse_port(const char *text, size_t len, unsigned *port);
/* Exposes port: 0, -EEXIST, -ENOSPC past expose_max_ports, or the listener's -errno. */
int expose_add(unsigned port);
/* Closes the port's listener and resets its connections: 0 or -ENOENT. */
int expose_remove(unsigned port);
/* The exposure of port (serial 0: whichever is current; else only that one): 0 or -ENOENT.
 * Clear info with expose_info_clear. */
int expose_get(unsigned port, uint32_t serial, struct expose_info *info);
/* Every exposed port, by port: *v to free with expose_list_free. */
size_t expose_list(struct expose_info **v);
void expose_list_free(struct expose_info *v, size_t n);
void expose_info_clear(struct expose_info *info);
/* "http://ADDRESS:HOST_PORT/" ([ADDRESS] for IPv6). Caller frees. */
char *expose_url(const struct expose_info *info);
/* The status text: key value lines. Caller frees. */
char *expose_status(const struct expose_info *info);
/* Names the exposure (serial) of port: a line of at most EXPOSE_NAME_MAX bytes without control
 * characters, its newline dropped ("" clears it): 0, -EINVAL or -ENOENT. check_only: only
 * whether it would be taken. */
int expose_set_name(unsigned port, uint32_t serial, const char *name, size_t len, bool check_only);

#endif
