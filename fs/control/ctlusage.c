/* What the sandbox uses and may use: the metrics files (metrics.h, docs/metrics.md), `metrics`
 * at the root (the sandbox and every session), in a session's directory and in a background
 * process's, rendered at each open; and `limits`, whose limits a write changes at once
 * (live_limits.h): each line checked at its write(), all of them applied at close, all or
 * nothing. */
#include <pthread.h>
#include <string.h>

#include "ctl.h"
#include "ctlfile_priv.h"
#include "live_limits.h"
#include "metrics.h"

#define LIMITS_TEXT_MAX 4096

static char *render_metrics(struct ctlfh *fh, size_t *len)
{
	return metrics_render(fh->s, fh->job, len);
}

const struct kind_info metrics_row = {
    .name = "metrics",
    .help = "what the sandbox and each session use now, in Prometheus's text format",
    .mode = S_IFREG | 0444,
    .where = IN_ROOT,
    .flags = KF_ROOT,
    .render = render_metrics,
};

const struct kind_info smetrics_row = {
    .name = "metrics",
    .help = "what the session (or the process) uses now, in Prometheus's text format",
    .mode = S_IFREG | 0444,
    .where = IN_SESSION | IN_JOB,
    .render = render_metrics,
};

static int write_limits(fuse_req_t req, struct ctlfh *fh, const char *buf, size_t size)
{
	(void)req;
	return ctl_write_checked_lines(fh, buf, size, LIMITS_TEXT_MAX, live_limits_check);
}

static int apply_limits(struct ctlfh *fh, const char *text, size_t len, unsigned *n)
{
	char why[200] = "";
	int rc = live_limits_apply(text, len, why, sizeof(why));

	(void)n;
	if (rc < 0 && why[0])
		ctl_refuse(fh, -rc, why);
	return rc;
}

const struct kind_info limits_row = {
    .name = "limits",
    .help = "the sandbox's limits and use now, its uid, how workspace/ is served; write "
	    "memory_max, pids_max, cpu_max lines to change them at once",
    .mode = S_IFREG | 0644,
    .where = IN_ROOT,
    .flags = KF_ROOT,
    .render = ctl_render_limits,
    .write = write_limits,
    .apply = apply_limits,
};
