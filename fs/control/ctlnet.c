/* network/policy (each line checked at its write(), the whole policy applied at close, all or
 * nothing), and the connection log: network/log and a session's network, read like a log file
 * on disk (to its current end, then EOF; tail -f follows its size), from the oldest line the
 * ring still holds. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctlfile_priv.h"
#include "net.h"
#include "session.h"
#include "xmalloc.h"

/* A policy's text at most: 100,000 rules of a long name each. */
#define POLICY_TEXT_MAX (32u << 20)

static char *ctl_render_netpolicy(struct ctlfh *fh, size_t *len)
{
	(void)fh;
	return net_policy_read(len);
}

/* Each line checked at its write() (ctl_write_checked_lines). */
static int ctl_write_netpolicy(fuse_req_t req, struct ctlfh *fh, const char *buf, size_t size)
{
	(void)req;
	return ctl_write_checked_lines(fh, buf, size, POLICY_TEXT_MAX, net_policy_check_line);
}

static int ctl_apply_netpolicy(struct ctlfh *fh, const char *text, size_t len, unsigned *n)
{
	char why[160] = "";
	int rc = net_policy_write(text, len, why, sizeof(why));

	(void)n;
	if (rc < 0 && why[0])
		ctl_refuse(fh, -rc, why);
	return rc;
}

/* The log a handle reads: the session's, or the whole one. */
static const struct net_client *log_of(const struct ctlfh *fh)
{
	return fh->s ? session_net(fh->s) : NULL;
}

/* A session without a proxy (host mode) has no lines of its own: empty, not the whole log. */
static bool no_log(const struct ctlfh *fh)
{
	return fh->kind == K_SNETLOG && (!fh->s || !session_net(fh->s));
}

static void ctl_size_netlog(struct ctlfh *fh, struct stat *st)
{
	if (!no_log(fh))
		st->st_size = (off_t)net_log_end(log_of(fh));
}

static void read_net(const void *src, uint64_t *off, char *buf, size_t size, size_t *n)
{
	net_log_read(src, off, buf, size, n);
}

static int ctl_read_netlog(fuse_req_t req, struct fhandle *h, size_t size, off_t off,
			   struct waiter *w)
{
	struct ctlfh *fh = container_of(h, struct ctlfh, h);

	(void)w; /* never waits */
	if (no_log(fh)) {
		fuse_reply_buf(req, NULL, 0);
		return 0;
	}
	return ctl_read_log(req, fh, size, off, read_net, log_of(fh));
}

/* The rows of the kinds this file serves (ctlkind.h). */

const struct kind_info netdir_row = {
    .name = "network",
    .help = "the network policy and log",
    .mode = DIR_MODE,
    .where = IN_ROOT,
    .flags = KF_ROOT | KF_FIXED_ATTR,
    .holds = IN_NET,
    .parent = K_ROOT,
};

const struct kind_info netpolicy_row = {
    .name = "policy",
    .help = "mode none|filtered|host, allow and deny lines; applied at close",
    .mode = S_IFREG | 0644,
    .where = IN_NET,
    .flags = KF_ROOT,
    .render = ctl_render_netpolicy,
    .write = ctl_write_netpolicy,
    .apply = ctl_apply_netpolicy,
};

const struct kind_info netlog_row = {
    .name = "log",
    .help = "a line per connection through the proxy; reads to its end",
    .mode = S_IFREG | 0444,
    .where = IN_NET,
    .flags = KF_ROOT,
    .size = ctl_size_netlog,
    .read = ctl_read_netlog,
};

/* the session's own lines of network/log */
const struct kind_info snetlog_row = {
    .name = "network",
    .help = "the session's lines of network/log",
    .mode = S_IFREG | 0444,
    .where = IN_SESSION,
    .size = ctl_size_netlog,
    .read = ctl_read_netlog,
};
