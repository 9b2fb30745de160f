/* Running a session's queue on its shell: which op goes next, where output goes, what a report
 * or the shell's death means for the op in flight, and ending a command early (kill, timeout,
 * an OOM kill in it): its processes are signalled through the session's cgroup, the shell is
 * told to skip the rest of the script, and a shell that is itself stuck is replaced, keeping
 * the last env and cwd. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgmem.h"
#include "gitrun.h"
#include "log.h"
#include "session_priv.h"
#include "xmalloc.h"

/* How long a shell may take to report after its command's processes were killed. */
#define STUCK_MS 300
/* How often a killed command's leftovers are looked at while the next command waits. */
#define HOLD_POLL_MS 10

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

static void timer_fired(struct loop_timer *t);

static void set_timer(struct session *s, enum timer_phase phase, uint64_t ms)
{
	s->phase = phase;
	s->timer.fn = timer_fired;
	if (phase == TP_NONE)
		loop_timer_cancel(&s->timer);
	else
		loop_timer_arm(&s->timer, ms);
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

static void leftover_grace(struct loop_timer *t)
{
	struct session *s = container_of(t, struct session, leftover_timer);

	cgroup_signal(s->cg, s->sh ? shell_pid(s->sh) : 0, SIGKILL);
	if (s->grace_hold) { /* a kill of leftovers took over a killed command's grace */
		s->grace_hold = false;
		exec_pump(s);
	}
}

static bool only_the_shell_left(struct session *s)
{
	pid_t *pids;
	size_t n = cgroup_pids(s->cg, &pids);

	free(pids);
	return n <= (s->sh ? 1u : 0u);
}

/* The killed command's leftovers: KILL at the end of the grace, and the next command waits
 * for them to be gone (or that KILL would reach it too), looking every HOLD_POLL_MS. */
static void grace_hold_poll(struct loop_timer *t)
{
	struct session *s = container_of(t, struct session, leftover_timer);

	if (loop_now_ns() < s->grace_end_ns && !only_the_shell_left(s)) {
		loop_timer_arm(t, HOLD_POLL_MS);
		return;
	}
	cgroup_signal(s->cg, s->sh ? shell_pid(s->sh) : 0, SIGKILL);
	s->grace_hold = false;
	exec_pump(s);
}

/* A kill's grace outlives its command: what deferred the signal (a bash of a fork bomb, in
 * its fork retry loop) gets the KILL anyway, as a kill's leftovers do. */
static void keep_grace_for_leftovers(struct session *s)
{
	if (s->phase != TP_GRACE || !s->cg || only_the_shell_left(s))
		return;
	s->grace_hold = true;
	s->grace_end_ns = s->timer.deadline_ns;
	s->leftover_timer.fn = grace_hold_poll;
	loop_timer_arm(&s->leftover_timer, HOLD_POLL_MS);
}

static void finish_current(struct session *s, int status)
{
	struct op *op = s->current;

	s->current = NULL;
	keep_grace_for_leftovers(s);
	set_timer(s, TP_NONE, 0);
	if (op->kind == OP_RUN) {
		stdin_end(s);
		if (op->run->state == RUN_RUNNING)
			op->run->oom_kills = cgmem_oom_kills(s->cg, false) - op->run->oom_mark;
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

static void do_kill(struct session *s, int sig);

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
		do_kill(s, r->timed_out ? SIGKILL : r->kill_sig);
}

static const struct shell_cbs session_shell_cbs = {
	.on_report = shell_report,
	.on_started = shell_started,
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
	r->oom_mark = cgmem_oom_kills(s->cg, false);
	shell_send(s->sh, seq, r->cmd, r->cmdlen, stdin_path);
	if (timeout)
		set_timer(s, TP_TIMEOUT, timeout);
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
	op->git = gitrun_start(s, op->run, &op->req, op->rel, op->shown,
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
		stdin_begin(s); /* calls exec_send_run once the command's stdin is ready */
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

/* Signals every process of the session but the shell; without a cgroup, the shell's process
 * group, shell included (it is then replaced). */
static void signal_command(struct session *s, int sig)
{
	if (s->cg)
		cgroup_signal(s->cg, shell_pid(s->sh), sig);
	else
		shell_signal(s->sh, sig, true);
}

static void kill_hard(struct session *s)
{
	signal_command(s, SIGKILL);
	set_timer(s, TP_STUCK, STUCK_MS);
}

static void timer_fired(struct loop_timer *t)
{
	struct session *s = container_of(t, struct session, timer);
	enum timer_phase phase = s->phase;

	s->phase = TP_NONE;
	if (!s->sh)
		return;
	switch (phase) {
	case TP_TIMEOUT:
		exec_kill(s, SIGKILL, true);
		break;
	case TP_GRACE:
		kill_hard(s);
		break;
	case TP_STUCK:
		if (s->stuck_retried) {
			/* The shell itself is busy (a builtin loop): replace it. */
			log_info("session %s: shell stuck after a kill; replacing it", s->id);
			shell_kill(s->sh);
			break;
		}
		/* Once more, in case the first signal came while the shell was between two
		 * commands of ours and ignored it. */
		s->stuck_retried = true;
		shell_signal(s->sh, SIGUSR1, false);
		kill_hard(s);
		break;
	default:
		break;
	}
}

/* Tells the shell to abandon the command and signals its processes. */
static void abort_command(struct session *s, int sig)
{
	s->stuck_retried = false;
	/* The abort must be pending in the shell before it sees its command die, or it runs the
	 * next command of the script first: with a cgroup both go out in one frozen moment;
	 * without, the launcher sends them in order. */
	if (s->cg) {
		cgroup_signal_keep(s->cg, shell_pid(s->sh), SIGUSR1, sig);
	} else {
		shell_signal(s->sh, SIGUSR1, false);
		signal_command(s, sig);
	}
	if (sig == SIGKILL)
		set_timer(s, TP_STUCK, STUCK_MS);
	else
		set_timer(s, TP_GRACE, session_cfg->kill_grace_ms);
}

/* The same, and bash's notices of our kill do not reach the command's stderr. */
static void do_kill(struct session *s, int sig)
{
	shell_mute_stderr(s->sh);
	abort_command(s, sig);
}

/* The OOM killer took a process of the running command: the rest of it goes too, as after a
 * kill, so the command ends with 137 and nothing of it lives on at the limit (a pool that
 * respawns its killed worker, a script that carries on). */
void exec_oom(void *arg)
{
	struct session *s = arg;
	struct run *r;

	if (!s->current || s->current->kind != OP_RUN || !s->sh)
		return;
	r = s->current->run;
	if (r->state != RUN_RUNNING || !r->started_ack || s->in.holding || r->oom_ended ||
	    r->killed || r->timed_out || cgmem_oom_kills(s->cg, false) == r->oom_mark)
		return;
	r->oom_ended = true;
	/* Unmuted: bash's notice that the OOM killer's victim was Killed is the command's news. */
	abort_command(s, SIGKILL);
}

int exec_kill(struct session *s, int sig, bool timed_out)
{
	struct run *r;

	if (!s->current || s->current->kind != OP_RUN || !s->sh)
		return -ESRCH;
	r = s->current->run;
	if (timed_out) {
		r->timed_out = true;
	} else if (!r->killed) {
		r->killed = true;
		r->kill_sig = sig;
	}
	/* Not sent yet (exec_send_run ends it), or not started (shell_started kills it). */
	if (s->in.holding || !r->started_ack)
		return 0;
	do_kill(s, timed_out ? SIGKILL : sig);
	return 0;
}

int exec_kill_all(struct session *s, int sig)
{
	int hit;

	if (exec_kill(s, sig, false) == 0)
		return 1;
	/* A shell still starting has no pid to spare yet. */
	if (s->sh && shell_pid(s->sh) <= 0)
		return -EAGAIN;
	hit = cgroup_signal(s->cg, s->sh ? shell_pid(s->sh) : 0, sig);
	if (hit > 0 && sig != SIGKILL) {
		s->leftover_timer.fn = leftover_grace;
		loop_timer_arm(&s->leftover_timer, session_cfg->kill_grace_ms);
	}
	return hit;
}

int exec_restart(struct session *s)
{
	if (!s->sh)
		return exec_start_shell(s);
	if (s->current && s->current->kind == OP_RUN && !s->current->run->killed) {
		s->current->run->killed = true;
		s->current->run->kill_sig = SIGKILL;
	}
	s->restart_wanted = true;
	s->st = SH_DYING; /* nothing more is sent to it */
	/* The KILL below ends the leftovers too. */
	s->grace_hold = false;
	loop_timer_cancel(&s->leftover_timer);
	if (s->cg)
		cgroup_signal(s->cg, 0, SIGKILL);
	shell_kill(s->sh);
	return 0;
}

void exec_teardown(struct session *s)
{
	struct op *op;

	s->removed = true;
	cgmem_unwatch(s->oom_watch);
	s->oom_watch = NULL;
	set_timer(s, TP_NONE, 0);
	loop_timer_cancel(&s->leftover_timer);
	jobs_teardown(s);
	terms_teardown(s);
	if (s->current && s->current->kind == OP_CHECKOUT)
		gitrun_kill(s->current->git);
	feed_wake(&s->in.feed); /* parked stdin writers learn the session is gone */
	while ((op = TAILQ_FIRST(&s->queue))) {
		TAILQ_REMOVE(&s->queue, op, link);
		exec_op_fail(op, 128 + SIGKILL, 0, NULL);
	}
	if (s->sh) {
		if (s->cg)
			cgroup_signal(s->cg, 0, SIGKILL);
		shell_kill(s->sh);
	}
}
