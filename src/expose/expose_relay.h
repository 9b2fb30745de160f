/* The relay of exposed ports: one thread of its own (never the loop thread, so a transfer does
 * not delay the control plane) that accepts the host's connections on the listeners it is
 * given, connects each into the sandbox's network namespace to 127.0.0.1:PORT (then [::1]:PORT),
 * and splices bytes both ways through a pair of pipes, half-closes included. */
#ifndef SBX_EXPOSE_RELAY_H
#define SBX_EXPOSE_RELAY_H

#include <stdatomic.h>
#include <stdint.h>

/* What a listener's connections did, written by the relay thread, read by anyone. */
struct relay_stats {
	atomic_uint active;		/* relayed now */
	atomic_uint_least64_t accepted; /* relayed since the port was exposed */
	atomic_uint_least64_t refused;	/* reset: nothing listened inside, or the cap was reached */
};

struct relay_listener;

/* Starts the thread; connections past max_conns (all listeners together) are reset as they
 * arrive. 0 or -errno. */
int relay_start(unsigned max_conns);
/* Closes every listener and connection, and ends the thread. */
void relay_stop(void);
/* Relays the connections fd (a listening socket; taken over) accepts to the sandbox's port,
 * counting them in st (which must stay valid until relay_unlisten returns). */
struct relay_listener *relay_listen(int fd, unsigned port, struct relay_stats *st);
/* Closes the listener and resets its connections; when it returns, the port refuses
 * connections and st is no longer touched. */
void relay_unlisten(struct relay_listener *l);

#endif
