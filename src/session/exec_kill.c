/* Ending a session's command early (kill, timeout, an OOM kill in it), restart and teardown: its
 * processes are signalled through the session's cgroup, the shell is told to skip the rest of the
 * script, a killed command's leftovers get KILL after the grace, and a shell that is itself stuck
 * is replaced. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>

#include "cgroup_mem.h"
#include "exec_priv.h"
#include "checkout_run.h"
#include "log.h"
#include "net.h"
#include "xmalloc.h"

/* How long a shell may take to report after its command's processes were killed. */
#define STUCK_MS 300
/* How often a killed command's leftovers are looked at while the next command waits. */
#define HOLD_POLL_MS 10

static void timer_fired(struct loop_timer *t);

void exec_set_timer(struct session *s, enum timer_phase phase, uint64_t ms)
{
	s->phase = phase;
	s->timer.fn = timer_fired;
	if (phase == TP_NONE)
		loop_timer_cancel(&s->timer);
	else
		loop_timer_arm(&s->timer, ms);
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
void exec_keep_grace_for_leftovers(struct session *s)
{
	if (s->phase != TP_GRACE || !s->cg || only_the_shell_left(s))
		return;
	s->grace_hold = true;
	s->grace_end_ns = s->timer.deadline_ns;
	s->leftover_timer.fn = grace_hold_poll;
	loop_timer_arm(&s->leftover_timer, HOLD_POLL_MS);
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
	exec_set_timer(s, TP_STUCK, STUCK_MS);
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
		exec_set_timer(s, TP_STUCK, STUCK_MS);
	else
		exec_set_timer(s, TP_GRACE, session_cfg->kill_grace_ms);
}

/* The same, and bash's notices of our kill do not reach the command's stderr. */
void exec_kill_now(struct session *s, int sig)
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
	    r->killed || r->timed_out || cgroup_mem_oom_kills(s->cg, false) == r->oom_mark)
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
	exec_kill_now(s, timed_out ? SIGKILL : sig);
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
	net_client_close(s->net);
	cgroup_mem_unwatch(s->oom_watch);
	s->oom_watch = NULL;
	exec_set_timer(s, TP_NONE, 0);
	loop_timer_cancel(&s->leftover_timer);
	session_child_teardown(s);
	if (s->current && s->current->kind == OP_CHECKOUT)
		checkout_run_kill(s->current->git);
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
