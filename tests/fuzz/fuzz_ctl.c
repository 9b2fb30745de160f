/* Fuzz target: ctl lines, as a session's ctl (session_ctl), a background process's
 * procs/NAME/ctl (job_ctl) and procs/ctl or the root procs/ctl (jobs_ctl) take them, all read by
 * one verb table each (verb.h). Properties: check-only and apply give the same verdict (applied to
 * an idle session and an idle process, where a kill finds nothing: ESRCH), a line reads the same
 * with a trailing newline and in its canonical form (verb, one space, argument), and a procs/ctl
 * line is one every ctl takes. "restart" is only checked: applied, it would start a shell. */
#include <errno.h>
#include <signal.h>

#include "fuzz.h"
#include "job.h"
#include "session_priv.h"
#include "signame.h"
#include "verb.h"
#include "xmalloc.h"

static struct session idle; /* no shell, no cgroup, nothing running */
static struct job *idle_job;

static void setup(void)
{
	TAILQ_INIT(&idle.queue);
	TAILQ_INIT(&idle.runs);
	for (int k = 0; k < SESSION_CHILD_KINDS; k++)
		TAILQ_INIT(&idle.children[k]);
	idle.refs = 1;
	FUZZ_ASSERT(job_create(&idle, "p") == 0);
	idle_job = job_find(&idle, "p");
	FUZZ_ASSERT(idle_job);
}

/* The verdicts of the three checks, for the line and for its variants. */
struct verdicts {
	int session, job, procs;
};

static struct verdicts check_all(const char *line, size_t len)
{
	struct verdicts v = {session_ctl(NULL, line, len), job_ctl(NULL, line, len),
			     jobs_ctl(NULL, line, len, false)};

	FUZZ_ASSERT(v.session == 0 || v.session == -EINVAL);
	FUZZ_ASSERT(v.job == 0 || v.job == -EINVAL);
	FUZZ_ASSERT(v.procs == 0 || v.procs == -EINVAL);
	return v;
}

static void same(struct verdicts a, struct verdicts b)
{
	FUZZ_ASSERT(a.session == b.session && a.job == b.job && a.procs == b.procs);
}

static void check_apply(const char *line, size_t len, struct verdicts v, const char *verb)
{
	int want;

	/* procs/ctl: an idle session (or the root's, over no session) has nothing to kill, which
	 * is no error; a removed session is. */
	FUZZ_ASSERT(jobs_ctl(&idle, line, len, true) == v.procs);
	FUZZ_ASSERT(jobs_ctl(NULL, line, len, true) == v.procs);
	idle.removed = true;
	FUZZ_ASSERT(jobs_ctl(&idle, line, len, true) == (v.procs == 0 ? -ENOENT : -EINVAL));
	idle.removed = false;
	/* A kill of a process that does not run is ESRCH; a timeout applies. */
	want = v.job == 0 && !strcmp(verb, "kill") ? -ESRCH : v.job;
	FUZZ_ASSERT(job_ctl(idle_job, line, len) == want);
	if (!strcmp(verb, "restart"))
		return;
	/* kill wants something to end, killall is done when nothing is left */
	want = v.session == 0 && !strcmp(verb, "kill") ? -ESRCH : v.session;
	idle.next_timeout_set = false;
	FUZZ_ASSERT(session_ctl(&idle, line, len) == want);
	FUZZ_ASSERT(idle.next_timeout_set == (v.session == 0 && !strcmp(verb, "timeout")));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *line = (const char *)data;
	struct verdicts v, v2;
	struct ctl_line cl;
	char *more, *canon;
	int sig;

	if (!idle_job)
		setup();
	v = check_all(line, size);
	if (v.procs == 0)
		FUZZ_ASSERT(v.session == 0 && v.job == 0);
	more = fuzz_line(data, size);
	v2 = check_all(more, size + 1);
	free(more);
	if (ctl_line_split(line, size, &cl) < 0) {
		FUZZ_ASSERT(v.session && v.job && v.procs);
		check_apply(line, size, v, "");
		return 0;
	}
	same(v, v2);
	if (cl.arg && signal_parse(cl.arg, &sig) == 0)
		FUZZ_ASSERT(sig > 0 && sig < NSIG);
	canon = cl.arg ? xasprintf("%s %s", cl.verb, cl.arg) : xstrdup(cl.verb);
	same(v, check_all(canon, strlen(canon)));
	check_apply(line, size, v, cl.verb);
	free(canon);
	return 0;
}
