/* A run's two events in the journal (journal.h): "<kind>.start" when it starts and "<kind>.end"
 * when its end is published, with the fields its creator labelled it with (its session, its
 * process's name, its cwd). A run refused before it started has only its end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "run.h"
#include "xmalloc.h"

/* The command's text in an event at most: the rest is cut, and "cmd_cut" says by how much. */
#define CMD_IN_EVENT 4096

static void event(struct run *r, const char *what, struct jrec *e)
{
	char kind[32];

	snprintf(kind, sizeof(kind), "%s.%s", r->jkind, what);
	jrec_begin(e, kind, r->jsid);
	jrec_int(e, "run", r->n);
	if (r->jkey)
		jrec_str(e, r->jkey, r->jvalue);
}

void run_journal_as(struct run *r, const char *kind, const char *sid, const char *key,
		    const char *value)
{
	r->jkind = kind;
	r->jsid = sid ? xstrdup(sid) : NULL;
	r->jkey = key;
	r->jvalue = xstrdup(value);
	if (r->state == RUN_DONE)
		run_journal_end(r);
}

void run_journal_begin(struct run *r)
{
	struct jrec e;
	size_t len = r->cmdlen < CMD_IN_EVENT ? r->cmdlen : CMD_IN_EVENT;

	if (!r->jkind)
		return;
	event(r, "start", &e);
	jrec_strn(&e, "cmd", r->cmd, len);
	if (len < r->cmdlen)
		jrec_int(&e, "cmd_cut", (long long)(r->cmdlen - len));
	jrec_commit(&e);
}

/* Why it ended, in one word. */
static const char *reason(const struct run *r)
{
	if (r->error)
		return "error";
	if (r->oom_kills || r->oom_ended)
		return "oom";
	if (r->timed_out)
		return "timeout";
	if (r->killed)
		return "killed";
	return r->status > 128 ? "signal" : "exit";
}

void run_journal_end(struct run *r)
{
	struct jrec e;
	long long ms = (r->ended.tv_sec - r->started.tv_sec) * 1000LL +
		       (r->ended.tv_nsec - r->started.tv_nsec) / 1000000;
	char *error;

	if (!r->jkind)
		return;
	event(r, "end", &e);
	jrec_int(&e, "exit", r->status);
	if (r->status > 128)
		jrec_int(&e, "signal", r->status - 128);
	jrec_str(&e, "reason", reason(r));
	jrec_int(&e, "duration_ms", ms);
	jrec_int(&e, "stdout_bytes", (long long)r->out[RUN_STDOUT].size);
	jrec_int(&e, "stderr_bytes", (long long)r->out[RUN_STDERR].size);
	if (r->oom_kills)
		jrec_int(&e, "oom_kills", (long long)r->oom_kills);
	if (r->pids_hits)
		jrec_int(&e, "pids_limit_hits", (long long)r->pids_hits);
	if (r->shell_pid)
		jrec_int(&e, "pid", r->shell_pid);
	if ((error = run_error_text(r))) {
		jrec_str(&e, "error", error);
		free(error);
	}
	jrec_commit(&e);
}
