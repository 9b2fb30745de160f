/* The sandbox's network as the daemon runs it: the mode and the live policy, sbxfs-netproxy (the
 * proxy, an unprivileged helper it starts and restarts), one proxy listener per session and per
 * context in the sandbox's network namespace with the environment that points there, and the
 * connection log. In host mode none of it runs: commands have the host's network. Every function
 * takes the core lock itself unless it says otherwise. */
#ifndef SBX_NET_H
#define SBX_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "envlist.h"
#include "netpolicy.h"

/* A session's or a context's way out: its listener and its part of the log. */
struct net_client;

/* Core lock not held, loop initialised: starts the proxy with the configured policy (not in
 * host mode, or without isolation: then the mode is all there is). 0 or -errno with a reason. */
int net_init(const struct config *cfg, const char *proxy_bin, char *err, size_t errlen);
/* Core lock not held, loop stopped: ends the proxy, closes every listener. */
void net_shutdown(void);
enum net_mode net_mode(void);
/* The `limits` line(s): "network MODE\n"; caller frees. */
char *net_describe(void);

/* Core lock held: a listener for label ("ID" of a session, "context:NAME"), handed to the
 * proxy; NULL when there is no proxy (host mode, no isolation) or it cannot be made (logged). */
struct net_client *net_client_open(const char *label);
/* Core lock held: the proxy variables of c in env (nothing for NULL). */
void net_client_env(const struct net_client *c, struct envlist *env);
/* Core lock held (the session or context leaves): closes the listener (connections under way
 * go on; their lines go to the whole log only). c stays readable. NULL: nothing. */
void net_client_close(struct net_client *c);
/* Frees c, closed before (no lock needed: nothing else holds it). NULL: nothing. */
void net_client_free(struct net_client *c);

/* The policy file: "mode MODE" then the rules; caller frees. */
char *net_policy_read(size_t *len);
/* One line as a write gives it: 0, -EINVAL (malformed) or -EOPNOTSUPP (a change to or from
 * host mode, or rules in host mode: they need a new network namespace), and why in why. */
int net_policy_check_line(const char *line, size_t len, char *why, size_t whylen);
/* A whole new policy (the mode kept if it has no mode line), all or nothing: 0 or as above,
 * -E2BIG past NETPOLICY_RULES_MAX rules. New connections follow it at once. */
int net_policy_write(const char *text, size_t len, char *why, size_t whylen);

/* The log, of c or of all (NULL): up to size bytes from *off (moved up to the oldest byte held
 * if below it) into buf, *n of them: 0 at its current end, as a file on disk gives. */
void net_log_read(const struct net_client *c, uint64_t *off, char *buf, size_t size, size_t *n);
/* Bytes written to the log so far: its size. */
uint64_t net_log_end(const struct net_client *c);
/* Bytes sent and received by the ended connections of c (NULL: of the whole sandbox). Takes
 * the core lock. */
void net_bytes(const struct net_client *c, uint64_t *up, uint64_t *down);

#endif
