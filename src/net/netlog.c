/* The connection log: one line per connection the proxy reports, in a ring for the whole sandbox
 * (network/log, NETLOG_ALL bytes) and one per session or context (sessions/ID/network,
 * NETLOG_CLIENT bytes). The oldest lines go first; offsets count from the start, so it reads
 * like a log file on disk: to its current end, then EOF, and tail -f (which polls its growing
 * size) follows it. The proxy's
 * records are untrusted (it parses what the sandbox sends): each string in them is written in
 * the %HH form (escape.h), so no byte of a host name can make a field or a line of its own. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "escape.h"
#include "journal.h"
#include "log.h"
#include "loop.h"
#include "net_priv.h"

#define NETLOG_ALL    (1u << 20)
#define NETLOG_CLIENT (256u << 10)

static struct termring all;
static unsigned bad_records;
static uint64_t bytes_up, bytes_down;

void netlog_init(void)
{
	termring_init(&all, NETLOG_ALL);
}

void netlog_shutdown(void)
{
	termring_free(&all);
}

void netlog_client_init(struct net_client *c)
{
	termring_init(&c->log, NETLOG_CLIENT);
}

void netlog_client_free(struct net_client *c)
{
	termring_free(&c->log);
}

static const char *verdict_name(uint8_t v)
{
	return v == NETV_ALLOW ? "allow" : v == NETV_FAIL ? "fail" : "deny";
}

static const char *proto_name(uint8_t p)
{
	return p == 'C' ? "connect" : p == 'H' ? "http" : p == 'S' ? "socks" : "-";
}

/* When the connection started: now less its duration, in UTC with milliseconds. */
static void start_time(uint32_t ms, char *out, size_t len)
{
	struct timespec now;
	struct tm tm;
	int64_t t;

	clock_gettime(CLOCK_REALTIME, &now);
	t = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 - ms;
	gmtime_r(&(time_t){(time_t)(t / 1000)}, &tm);
	snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(t % 1000));
}

/* The connection in the journal: its session (or context), and the record's fields. */
static void journal_conn(const struct net_client *c, const struct netmsg_conn *m)
{
	bool ctx = c && !strncmp(c->label, "context:", 8);
	struct jrec r;

	jrec_begin(&r, "net.connection", c && !ctx ? c->label : NULL);
	if (ctx)
		jrec_str(&r, "context", c->label + 8);
	jrec_str(&r, "proto", proto_name(m->proto));
	jrec_str(&r, "host", m->host);
	jrec_int(&r, "port", m->port);
	jrec_str(&r, "addr", m->addr);
	jrec_str(&r, "verdict", verdict_name(m->verdict));
	jrec_str(&r, "rule", m->rule);
	jrec_int(&r, "bytes_up", (long long)m->up);
	jrec_int(&r, "bytes_down", (long long)m->down);
	jrec_int(&r, "ms", m->ms);
	jrec_commit(&r);
}

/* The bytes of ended connections, for the metrics: the sandbox's and the client's. */
static void count_bytes(struct net_client *c, const struct netmsg_conn *m)
{
	bytes_up += m->up;
	bytes_down += m->down;
	if (c) {
		c->bytes_up += m->up;
		c->bytes_down += m->down;
	}
}

void net_bytes(const struct net_client *c, uint64_t *up, uint64_t *down)
{
	core_lock();
	*up = c ? c->bytes_up : bytes_up;
	*down = c ? c->bytes_down : bytes_down;
	core_unlock();
}

void netlog_record(struct net_client *c, const struct netmsg_conn *m)
{
	char when[64], line[4096], *host, *addr, *rule;
	bool v6;
	int n;

	if (!netmsg_conn_ok(m)) {
		if (bad_records++ == 0)
			log_warnx("sbxfs-netproxy sent a malformed record (more are not logged)");
		return;
	}
	host = esc_percent(m->host, false);
	addr = esc_percent(m->addr, false);
	rule = esc_percent(m->rule, true);
	v6 = strchr(host, ':') != NULL;
	start_time(m->ms, when, sizeof(when));
	n = snprintf(line, sizeof(line),
		     "%s %s - %s %s%s%s:%u %s %s %" PRIu64 " %" PRIu64 " %" PRIu32 " %s\n", when,
		     c ? c->label : "-", proto_name(m->proto), v6 ? "[" : "", host, v6 ? "]" : "",
		     m->port, addr, verdict_name(m->verdict), m->up, m->down, m->ms, rule);
	free(host);
	free(addr);
	free(rule);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line)) {
		n = sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	termring_put(&all, line, (size_t)n);
	if (c)
		termring_put(&c->log, line, (size_t)n);
	count_bytes(c, m);
	journal_conn(c, m);
}

void net_log_read(const struct net_client *c, uint64_t *off, char *buf, size_t size, size_t *n)
{
	const struct termring *r = c ? &c->log : &all;

	core_lock();
	if (*off < termring_oldest(r))
		*off = termring_oldest(r);
	*n = termring_get(r, *off, buf, size);
	core_unlock();
}

uint64_t net_log_end(const struct net_client *c)
{
	uint64_t end;

	core_lock();
	end = c ? c->log.end : all.end;
	core_unlock();
	return end;
}
