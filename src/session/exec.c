/* Running a session's queue on its shell: which op goes next, where output goes, what a report
 * or the shell's death means for the op in flight, and restarting a dead shell with the last env
 * and cwd. Ending a command early (kill, timeout, OOM) is exec_kill.c's. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup_mem.h"
#include "cgroup_stat.h"
#include "changes.h"
#include "exec_priv.h"
#include "checkout_run.h"
#include "log.h"
#include "xmalloc.h"

void exec_op_free(struct op *op)
{
	if (op->run)
		run_unref(op->run);
	if (op->ticket)
		ticket_unref(op->ticket);
	envedits_free(&op->edits);
	checkout_req_free(&op->req);
	free(op->rel);
	free(op->shown);
	free(op->path);
	free(op);
}

void exec_op_fail(struct op *op, int run_status, int err, const char *why)
{
	char *text;

	if (op->kind == OP_RUN) {
		if (why) {
			text = err ? xasprintf("sbxfs: %s: %s\n", why, strerror(err))
				   : xasprintf("sbxfs: %s\n", why);
			spool_append(&op->run->out[RUN_STDERR], text, strlen(text));
			run_set_error(op->run, err, why);
			free(text);
		}
		run_end(op->run, run_status);
	} else if (op->kind == OP_CHECKOUT) {
		text = !why ? xstrdup("error io: the session was removed before the checkout ran\n")
		       : err ? xasprintf("error io: %s: %s\n", why, strerror(err))
			     : xasprintf("error io: %s\n", why);
		spool_append(&op->run->out[RUN_STDOUT], text, strlen(text));
		free(text);
		run_end(op->run, 1);
	} else if (op->kind == OP_CHDIR) {
		ticket_done(op->ticket, err ? -err : -EIO);
	}
	exec_op_free(op);
}

static struct spool *shell_sink(void *arg, int fd_no)
{
	struct session *s = arg;

	if (!s->current || s->current->kind != OP_RUN)
		return NULL;
	return &s->current->run->out[fd_no == 1 ? RUN_STDOUT : RUN_STDERR];
}

static int chdir_result(int status)
{
	switch (status) {
	case 0:
		return 0;
	case ENOENT:
	case ENOTDIR:
	case EACCES:
		return -status;
	default:
		return -EIO;
	}
}

/* A killed or timed-out command ends as such, whatever the shell made of it. */
static int run_final_status(const struct run *r, int status)
{
	if (r->timed_out)
		return 124;
	if (r->killed)
		return 128 + r->kill_sig;
	if (r->oom_ended)
		return 128 + SIGKILL;
	return status;
}

/* Forks refused at a pids.max: the session's own and the sandbox's. */
static uint64_t pids_hits(struct session *s)
{
	return cgroup_pids_max_hits(s->cg) + cgroup_pids_max_hits(cgroup_sandbox());
}

static void finish_current(struct session *s, int status)
{
	struct op *op = s->current;

	s->current = NULL;
	exec_keep_grace_for_leftovers(s);
	exec_set_timer(s, TP_NONE, 0);
	if (op->kind == OP_RUN) {
		session_stdin_end(s);
		if (op->run->state == RUN_RUNNING) {
			op->run->oom_kills = cgroup_mem_oom_kills(s->cg, false) - op->run->oom_mark;
			op->run->pids_hits = pids_hits(s) - op->run->pids_mark;
		}
		run_end(op->run, run_final_status(op->run, status));
	} else if (op->kind == OP_CHDIR) {
		ticket_done(op->ticket, chdir_result(status));
	}
	exec_op_free(op);
}

static void shell_report(void *arg, struct shell_report *rep)
{
	struct session *s = arg;
	struct envlist tmp = s->env;

	s->env = rep->env;
	rep->env = tmp;
	if (rep->cwd[0]) {
		free(s->cwd);
		s->cwd = xstrdup(rep->cwd);
	}
	changes_note(); /* its env and cwd */
	if (s->current)
		finish_current(s, rep->status);
	else if (strcmp(rep->seq, "i") != 0)
		log_warnx("session %s: unexpected report '%s'", s->id, rep->seq);
	if (s->ready && !strcmp(rep->seq, "i")) { /* up: the mkdir succeeds */
		ticket_done(s->ready, 0);
		ticket_unref(s->ready);
		s->ready = NULL;
	}
	if (s->st != SH_DYING)
		s->st = SH_IDLE;
	exec_pump(s);
}

/* Ends an op that needs the shell when none can be had; env edits are kept for the next one. */
static void fail_for_shell(struct session *s, struct op *op, int err, const char *why)
{
	if (op->kind == OP_ENV) {
		envlist_apply(&s->env, &op->edits);
		exec_op_free(op);
		return;
	}
	exec_op_fail(op, RUN_EXIT_NOSHELL, err, why);
}

static void fail_first_queued(struct session *s, int wstatus, int start_err)
{
	struct op *op = TAILQ_FIRST(&s->queue);
	char *why;

	TAILQ_REMOVE(&s->queue, op, link);
	if (start_err)
		why = xstrdup("the launcher could not start the session's shell");
	else
		why = xasprintf("the session's shell (%s) exited at start with status %d; see the "
				"daemon log",
				session_cfg->shell, run_status_from_wait(wstatus));
	log_warnx("session %s: %s%s%s", s->id, why, start_err ? ": " : "",
		  start_err ? strerror(start_err) : "");
	fail_for_shell(s, op, start_err, why);
	free(why);
}

static void shell_exited(void *arg, int wstatus, int start_err)
{
	struct session *s = arg;
	bool was_starting = s->st == SH_STARTING;

	s->sh = NULL;
	s->st = SH_NONE;
	/* env edits the shell took with it are kept: the next shell starts with them. */
	if (s->current && s->current->kind == OP_ENV)
		envlist_apply(&s->env, &s->current->edits);
	if (s->current && s->current->kind != OP_CHECKOUT) /* a checkout does not need it */
		finish_current(s, run_status_from_wait(wstatus));
	else if (was_starting && !TAILQ_EMPTY(&s->queue) && !s->restart_wanted)
		/* A shell that cannot start would be restarted forever: fail the op instead. */
		fail_first_queued(s, wstatus, start_err);
	if (was_starting && s->ready) {
		/* Its mkdir is still waiting: it fails, and no half session remains. */
		while (!TAILQ_EMPTY(&s->queue))
			fail_first_queued(s, wstatus, start_err);
		session_start_failed(s, start_err ? -start_err : -EIO);
	}
	if (s->gone) {
		ticket_done(s->gone, 0);
		ticket_unref(s->gone);
		s->gone = NULL;
	} else if (s->restart_wanted && !s->removed) {
		s->restart_wanted = false;
		if (exec_start_shell(s) < 0)
			exec_pump(s); /* which fails what is queued */
	} else {
		exec_pump(s);
	}
	session_unref(s); /* the shell's reference */
}

static void shell_started(void *arg)
{
	struct session *s = arg;
	struct run *r;

	if (!s->current || s->current->kind != OP_RUN)
		return;
	r = s->current->run;
	r->started_ack = true;
	/* A kill that came before the shell could take it is carried out now. */
	if (r->timed_out || r->killed)
		exec_kill_now(s, r->timed_out ? SIGKILL : r->kill_sig);
}

/* A command sent before the launcher's report of the pid gets it now. */
static void shell_pid_known(void *arg, pid_t pid)
{
	struct session *s = arg;

	if (s->current && s->current->kind == OP_RUN && s->current->run->shell_pid == 0)
		s->current->run->shell_pid = pid;
}

static const struct shell_cbs session_shell_cbs = {
	.on_report = shell_report,
	.on_started = shell_started,
	.on_pid = shell_pid_known,
	.on_exit = shell_exited,
	.sink = shell_sink,
};

int exec_start_shell(struct session *s)
{
	int err = 0;

	s->sh = shell_start(session_cfg, &s->env, s->cwd, s->cg, &session_shell_cbs, s, &err);
	if (!s->sh) {
		log_warnx("session %s: cannot start a shell: %s", s->id, strerror(-err));
		return err;
	}
	session_ref(s);
	s->st = SH_STARTING;
	if (s->started_once)
		s->restarts++;
	s->started_once = true;
	return 0;
}

static char *env_script(const struct envedits *ed, size_t *len)
{
	char *script = xstrdup("");

	for (size_t i = 0; i < ed->n; i++) {
		char *q = ed->e[i].value ? shell_quote(ed->e[i].value) : NULL;
		char *next = q ? xasprintf("%sbuiltin export %s=%s\n", script, ed->e[i].name, q)
			       : xasprintf("%sbuiltin unset -v %s\n", script, ed->e[i].name);

		free(q);
		free(script);
		script = next;
	}
	*len = strlen(script);
	return script;
}

static char *chdir_script(const char *path, size_t *len)
{
	char *q = shell_quote(path);
	char *script = xasprintf(
		"__sbx_d=%s%s; if [[ ! -e $__sbx_d ]]; then __sbx_r=%d; "
		"elif [[ ! -d $__sbx_d ]]; then __sbx_r=%d; "
		"elif builtin cd -- \"$__sbx_d\" 2>/dev/null; then __sbx_r=0; else __sbx_r=%d; fi; "
		"__sbx_status $__sbx_r",
		path[0] == '/' ? "" : "./", q, ENOENT, ENOTDIR, EACCES);

	free(q);
	*len = strlen(script);
	return script;
}

void exec_send_run(struct session *s, const char *stdin_path)
{
	struct run *r = s->current->run;
	uint64_t timeout = s->next_timeout_set ? s->next_timeout_ms : s->timeout_ms;
	char seq[32];

	s->next_timeout_set = false;
	if (r->killed || r->timed_out) {
		/* Killed while its stdin was being set up: it never starts. */
		finish_current(s, 0);
		s->st = SH_IDLE;
		exec_pump(s);
		return;
	}
	snprintf(seq, sizeof(seq), "r%u", r->n);
	r->timeout_ms = timeout;
	r->shell_pid = shell_pid(s->sh);
	run_begin(r);
	r->oom_mark = cgroup_mem_oom_kills(s->cg, false);
	r->pids_mark = pids_hits(s);
	shell_send(s->sh, seq, r->cmd, r->cmdlen, stdin_path);
	if (timeout)
		exec_set_timer(s, TP_TIMEOUT, timeout);
}

void exec_unrun(struct session *s, int err, const char *why)
{
	struct run *r = s->current->run;
	char *text = err ? xasprintf("sbxfs: %s: %s\n", why, strerror(err))
			 : xasprintf("sbxfs: %s\n", why);

	log_warnx("session %s: command %u not run: %s%s%s", s->id, r->n, why, err ? ": " : "",
		  err ? strerror(err) : "");
	spool_append(&r->out[RUN_STDERR], text, strlen(text));
	free(text);
	run_set_error(r, err, why);
	s->next_timeout_set = false;
	finish_current(s, RUN_EXIT_UNRUN);
	s->st = SH_IDLE;
	exec_pump(s);
}

static void checkout_done(struct session *s)
{
	struct op *op = s->current;

	if (!op || op->kind != OP_CHECKOUT)
		return; /* the session was torn down under it */
	s->current = NULL;
	exec_op_free(op);
	exec_pump(s);
}

static void start_checkout(struct session *s, struct op *op)
{
	struct envlist env;

	session_next_env(s, &env);
	op->git = checkout_run_start(s, op->run, &op->req, op->rel, op->shown,
				     envlist_get(&env, "GIT_TOKEN"), checkout_done);
	envlist_free(&env);
}

static void send_op(struct session *s, struct op *op)
{
	char *script;
	size_t len;

	switch (op->kind) {
	case OP_CHECKOUT:
		start_checkout(s, op);
		return;
	case OP_RUN:
		if (session_stdin_wanted(s))
			session_stdin_begin(s); /* calls exec_send_run once the pipe is held */
		else
			exec_send_run(s, NULL);
		return;
	case OP_ENV:
		script = env_script(&op->edits, &len);
		shell_send(s->sh, "e", script, len, NULL);
		break;
	case OP_CHDIR:
		script = chdir_script(op->path, &len);
		shell_send(s->sh, "c", script, len, NULL);
		break;
	default:
		return;
	}
	free(script);
}

void exec_pump(struct session *s)
{
	struct op *op;

	if (s->removed || s->current || s->st == SH_STARTING || s->st == SH_DYING ||
	    s->grace_hold || TAILQ_EMPTY(&s->queue))
		return;
	if (!s->sh) {
		int err = exec_start_shell(s);

		while (err < 0 && (op = TAILQ_FIRST(&s->queue))) {
			TAILQ_REMOVE(&s->queue, op, link);
			fail_for_shell(s, op, -err, "cannot start the session's shell");
		}
		return;
	}
	op = TAILQ_FIRST(&s->queue);
	TAILQ_REMOVE(&s->queue, op, link);
	if (op->kind == OP_CHDIR && ticket_abandoned(op->ticket)) {
		exec_op_free(op); /* its writer was interrupted before it ran */
		exec_pump(s);
		return;
	}
	s->current = op;
	if (op->kind != OP_CHECKOUT) /* a checkout runs beside the idle shell */
		s->st = SH_BUSY;
	send_op(s, op);
}

void exec_enqueue(struct session *s, struct op *op)
{
	TAILQ_INSERT_TAIL(&s->queue, op, link);
	exec_pump(s);
}
