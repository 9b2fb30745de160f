/* What the relay thread (expose_relay.c) and its connections (expose_conn.c) share. Everything
 * here runs on the relay thread only. */
#ifndef SBX_EXPOSE_CONN_H
#define SBX_EXPOSE_CONN_H

#include <stdbool.h>
#include <sys/queue.h>

#include "expose_relay.h"

/* What an epoll event's data points to. */
enum tag_kind { TAG_WAKE, TAG_LISTENER, TAG_HOST, TAG_SANDBOX };

struct tag {
	enum tag_kind kind;
	void *p; /* the listener or the connection */
};

struct conn;

struct relay_listener {
	struct tag tag;
	int fd;
	unsigned port;
	struct relay_stats *st;
	bool dead; /* closed: events still in hand for it are dropped; freed after them */
	LIST_HEAD(, conn) conns;
	LIST_ENTRY(relay_listener) link;
};

extern int relay_epfd;

/* A connection the listener accepted (nonblocking): connected into the sandbox and relayed,
 * or reset when nothing listens there, the namespace is gone, or max_conns are relayed. */
void conn_open(struct relay_listener *l, int host_fd, unsigned max_conns);
/* An event on one side (TAG_HOST or TAG_SANDBOX) of c: moves what can be moved. */
void conn_event(struct conn *c, enum tag_kind side);
/* Closes c at once, resetting the host's side (an unexposed port). */
void conn_reset(struct conn *c);
/* Whether a connection stopped with bytes still to move (its share of one round was spent). */
bool conn_any_busy(void);
/* Gives each of those one more share. */
void conn_run_busy(void);
/* Frees the connections closed since the last call (events in hand may still name them). */
void conn_reap(void);

#endif
