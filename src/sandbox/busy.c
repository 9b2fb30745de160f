/* Whether anything runs in the sandbox besides what waits for work (see busy.h). */
#include "busy.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>

#include "cell.h"
#include "context.h"
#include "job.h"
#include "session.h"
#include "term.h"

/* Whether a terminal has a program that started and has not ended. */
static bool term_running(struct term *t)
{
	int status;

	return term_cmd_settable(t) == -EBUSY && term_wait_exit(t, &status, NULL) == -EAGAIN;
}

/* Whether a context's latest cell is queued or running. */
static bool context_busy(struct context *c)
{
	struct cell *cell = context_cell(c, 0);
	bool busy = cell && cell_wait(cell, NULL) < 0;

	if (cell)
		cell_unref(cell);
	return busy;
}

/* Each session's terminals and background processes: whether one runs; with stop, each that
 * runs is killed. */
static bool children_busy(struct session *s, bool stop)
{
	struct term_info *tv;
	struct job_info *jv;
	size_t nt = term_list(s, &tv), nj = job_list(s, &jv);
	bool busy = false;

	for (size_t i = 0; i < nt; i++) {
		struct term *t = term_find_id(s, tv[i].id);

		if (t && term_running(t)) {
			busy = true;
			if (stop)
				term_ctl(t, "kill KILL", 9);
		}
		if (t)
			term_unref(t);
	}
	for (size_t i = 0; i < nj; i++) {
		struct job *j = job_find_id(s, jv[i].id);

		if (j && job_idle(j) == -EBUSY) {
			busy = true;
			if (stop)
				job_signal(j, SIGKILL);
		}
		if (j)
			job_unref(j);
	}
	free(tv);
	free(jv);
	return busy;
}

/* Whether anything runs in the sandbox but the sessions' idle shells and the contexts' idle
 * interpreters; with stop, all of it is killed (as `killall KILL` would, for each kind). */
bool sandbox_busy(bool stop)
{
	struct session_info *sv;
	struct context_info *cv;
	size_t ns = session_list(&sv), nc = context_list(&cv);
	bool busy = false;

	for (size_t i = 0; i < ns; i++) {
		struct session *s = session_find_serial(sv[i].serial);

		if (!s)
			continue;
		if (session_busy(s)) {
			busy = true;
			if (stop)
				session_ctl(s, "killall KILL", 12);
		}
		busy |= children_busy(s, stop);
		session_unref(s);
	}
	for (size_t i = 0; i < nc; i++) {
		struct context *c = context_find_serial(cv[i].serial);

		if (c && context_busy(c)) {
			busy = true;
			if (stop)
				context_ctl(c, "kill", 4);
		}
		if (c)
			context_unref(c);
	}
	free(sv);
	free(cv);
	return busy;
}
