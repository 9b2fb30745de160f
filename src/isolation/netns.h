/* The sandbox's network namespace, made and held by the daemon (not by bwrap), so it outlives a
 * launcher's restart and the daemon can open sockets in it: the proxy's listeners on its
 * loopback. */
#ifndef SBX_NETNS_H
#define SBX_NETNS_H

#include <stdint.h>

/* Makes the namespace with its loopback up: 0 or -errno (not root: -EPERM). */
int netns_create(void);
/* Its fd (the launcher's child joins it before bwrap), -1 if none was made. */
int netns_fd(void);
/* A TCP socket listening on 127.0.0.1:port (0: a free one) in the namespace: its fd, with the
 * port in *port, or -errno. */
int netns_listen(uint16_t port, uint16_t *bound);
void netns_close(void);

#endif
