/* The texts of the control files read whole: rendered at open (the snapshot that open reads
 * back) and at stat (for their size), from the session, run and process the handle is bound
 * to. NULL: no text (yet), which reads as an empty file. */
#include <string.h>

#include "ctl.h"
#include "ctlfile_priv.h"
#include "job.h"
#include "result.h"
#include "rootenv.h"
#include "run.h"
#include "sandbox.h"
#include "session.h"
#include "xmalloc.h"

/* text, a string, with its length */
static char *whole(char *text, size_t *len)
{
	*len = strlen(text);
	return text;
}

char *ctl_render_readme(struct ctlfh *fh, size_t *len)
{
	(void)fh;
	return whole(xstrdup(readme_text), len);
}

char *ctl_render_limits(struct ctlfh *fh, size_t *len)
{
	(void)fh;
	return whole(sandbox_describe(), len);
}

char *ctl_render_rootenv(struct ctlfh *fh, size_t *len)
{
	(void)fh;
	return rootenv_read(len);
}

char *ctl_render_env(struct ctlfh *fh, size_t *len)
{
	return session_env(fh->s, len);
}

char *ctl_render_cwd(struct ctlfh *fh, size_t *len)
{
	return session_cwd(fh->s, len);
}

char *ctl_render_cmd(struct ctlfh *fh, size_t *len)
{
	if (!fh->run)
		return NULL;
	*len = fh->run->cmdlen;
	return xmemdup(fh->run->cmd, fh->run->cmdlen);
}

char *ctl_render_timeout(struct ctlfh *fh, size_t *len)
{
	return whole(xasprintf("%llu\n", (unsigned long long)session_timeout(fh->s)), len);
}

char *ctl_render_ports(struct ctlfh *fh, size_t *len)
{
	return whole(job_ports(fh->job), len);
}

/* A process's, a run's (history) or the session's. */
char *ctl_render_status(struct ctlfh *fh, size_t *len)
{
	if (fh->job)
		return whole(job_status(fh->job), len);
	if (fh->n)
		return whole(run_status(fh->run), len);
	return session_status(fh->s, len);
}

/* Only once the run ended; before, a read waits and renders it then (ctlread.c). */
char *ctl_render_result(struct ctlfh *fh, size_t *len)
{
	char *text;
	int status;

	if (!fh->run || run_wait_exit(fh->run, &status, NULL) < 0 ||
	    result_render(fh->run, session_id(fh->s), &text, len) < 0)
		return NULL;
	return text;
}
