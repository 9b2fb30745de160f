/* The metrics files (docs/metrics.md): what the sandbox, its sessions and their background
 * processes use, in the Prometheus text exposition format (version 0.0.4), so a scrape or
 * node_exporter's textfile collector reads them as they are. */
#ifndef SBX_METRICS_H
#define SBX_METRICS_H

#include <stddef.h>

struct session;
struct job;

/* s NULL: the sandbox's and every session's series; s: that session's; j (of s): that
 * process's. Caller frees. */
char *metrics_render(struct session *s, struct job *j, size_t *len);

#endif
