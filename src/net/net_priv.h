/* What net.c (the proxy, the listeners, the policy) and netlog.c (the connection log) share. */
#ifndef SBX_NET_PRIV_H
#define SBX_NET_PRIV_H

#include <stdint.h>
#include <sys/queue.h>

#include "net.h"
#include "netmsg.h"
#include "termring.h"

struct net_client {
	uint32_t id;	     /* the listener's, in messages to the proxy */
	char *label;	     /* the session's id, or context:NAME */
	uint64_t bytes_up, bytes_down; /* of its ended connections */
	int fd;		     /* the listening socket, kept to hand a restarted proxy */
	uint16_t port;	     /* on the sandbox's 127.0.0.1 */
	char secret[NETMSG_SECRET_LEN + 1]; /* its credential, in its proxy variables */
	struct termring log; /* its own lines */
	LIST_ENTRY(net_client) link;
};

/* netlog.c, core lock held (but netlog_client_free: c's last user is gone) */
void netlog_init(void);
void netlog_shutdown(void);
void netlog_client_init(struct net_client *c);
void netlog_client_free(struct net_client *c);
/* A connection's record from the proxy, of client c (NULL: one already gone), as a log line in
 * the whole log and c's. */
void netlog_record(struct net_client *c, const struct netmsg_conn *m);

#endif
