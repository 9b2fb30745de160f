/* The metrics files (metrics.h, docs/metrics.md): `metrics` at the root (the sandbox and every
 * session), in a session's directory and in a background process's, rendered at each open. */
#include "ctl.h"
#include "ctlfile_priv.h"
#include "metrics.h"

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
