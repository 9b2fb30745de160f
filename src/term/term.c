/* Terminals (see term.h): naming, starting on a pty through the launcher, the master's output
 * into the ring and the emulator (read no faster than the emulator takes it in), queued input,
 * kill, exit and removal. */
#include "term.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "cgroup.h"
#include "journal.h"
#include "session_child.h"
#include "term_priv.h"
#include "termemu.h"
#include "termring.h"
#include "xmalloc.h"

#define TERM_ENV   "TERM=xterm-256color"
#define READ_CHUNK 65536
/* Reads of the master per wake-up, so one chatty terminal cannot hold the loop. */
#define READS_PER_WAKE 4
/* Reads of the master once the program ended: what its tree left (it is killed by then, unless
 * there is no cgroup: then bounded, so a survivor cannot hold the loop). */
#define READS_AT_EXIT 64
/* While the master waits for the emulator: how often to look whether it is stuck. */
#define THROTTLE_CHECK_MS 1000
/* How long a reader of screen or status waits for the emulator to catch up. */
#define CATCHUP_MS 1000
#define BROKEN_NOTICE                                                                              \
	"[sbxfs: this terminal's emulator stopped responding; the screen is frozen, out has all "  \
	"the output]\n"

static struct term *term_of(struct session_child *c)
{
	return c ? container_of(c, struct term, c) : NULL;
}

void term_unref(struct term *t)
{
	if (!session_child_unref(&t->c))
		return;
	if (t->master >= 0)
		close(t->master);
	termring_free(&t->ring);
	termemu_release(t->emu);
	session_child_release(&t->c);
	free(t->cmd);
	free(t->in);
	free(t->pattern);
	free(t);
}

const char *term_name(const struct term *t)
{
	return t->c.name;
}

unsigned term_id(const struct term *t)
{
	return t->c.id;
}

struct term *term_find(struct session *s, const char *name)
{
	return term_of(session_child_get(s, SESSION_CHILD_TERM, name, 0));
}

struct term *term_find_id(struct session *s, unsigned id)
{
	return term_of(session_child_get(s, SESSION_CHILD_TERM, NULL, id));
}

/* Core lock held: kill, detach from the session, drop the list's reference. */
static void forget(struct session_child *c);

static const struct session_child_ops term_child_ops = {SESSION_CHILD_TERM, 't', forget};

struct termemu_limits term_limits(void)
{
	return (struct termemu_limits){session_cfg->terms_max, session_cfg->term_cells_max,
				       TERMEMU_STUCK_MS};
}

static void on_emu(struct loop_fd *lf, uint32_t events, void *arg);

int term_create(struct session *s, const char *name)
{
	struct termemu_limits lim = term_limits();
	struct termemu *emu;
	struct term *t;
	int rc;

	if (!session_id_valid(name, strlen(name)))
		return -EINVAL;
	core_lock();
	if ((rc = session_child_free_name(s, SESSION_CHILD_TERM, name)) < 0 ||
	    (rc = termemu_new(24, 80, &lim, &emu)) < 0) {
		core_unlock();
		return rc;
	}
	t = xcalloc(1, sizeof(*t));
	t->master = -1;
	t->rows = 24;
	t->cols = 80;
	termring_init(&t->ring, session_cfg->term_ring);
	t->emu = emu;
	t->emu_lf = loop_add_fd(termemu_fd(emu), EPOLLIN, on_emu, t);
	t->in = xmalloc(TERM_IN_MAX);
	waitq_init(&t->outq);
	waitq_init(&t->inq);
	waitq_init(&t->screenq);
	session_child_add(&t->c, s, &term_child_ops, name);
	core_unlock();
	return 0;
}

size_t term_list(struct session *s, struct term_info **v)
{
	struct session_child *c;
	size_t n = 0;

	*v = NULL;
	core_lock();
	TAILQ_FOREACH(c, session_child_list(s, SESSION_CHILD_TERM), link)
	{
		*v = xrealloc(*v, (n + 1) * sizeof(**v));
		snprintf((*v)[n].name, sizeof((*v)[n].name), "%s", c->name);
		(*v)[n++].id = c->id;
	}
	core_unlock();
	return n;
}

/* Core lock held: the whole tree; without a cgroup, the program's session (its pgrp). */
static void signal_tree(struct term *t, int sig)
{
	launch_signal_tree(&t->proc, t->c.cg, sig);
}

static void grace_fired(struct loop_timer *lt)
{
	struct term *t = container_of(lt, struct term, grace);

	if (t->state == TS_RUNNING || t->state == TS_STARTING)
		signal_tree(t, SIGKILL);
}

/* Core lock held: sig now, KILL after the grace unless it was KILL. */
void term_kill(struct term *t, int sig)
{
	t->killed = true;
	signal_tree(t, sig);
	if (sig != SIGKILL && !t->grace.armed) {
		t->grace.fn = grace_fired;
		loop_timer_arm(&t->grace, session_cfg->kill_grace_ms);
	}
}

static void watch_master(struct term *t)
{
	if (t->lf)
		loop_mod_fd(t->lf, (t->throttled ? 0 : EPOLLIN) | (t->inlen ? EPOLLOUT : 0));
}

static void unthrottle(struct term *t)
{
	t->throttled = false;
	loop_timer_cancel(&t->throttle);
	watch_master(t);
}

static void throttle_check(struct loop_timer *lt)
{
	struct term *t = container_of(lt, struct term, throttle);

	/* room again, or the emulator was given up on (then it takes anything) */
	if (termemu_room(t->emu) > 0)
		unthrottle(t);
	else
		loop_timer_arm(&t->throttle, THROTTLE_CHECK_MS);
}

/* Core lock held: the emulator is a queue behind; the master is read again once it has room
 * (its fd says so) or is given up on. */
static void throttle(struct term *t)
{
	t->throttled = true;
	watch_master(t);
	t->throttle.fn = throttle_check;
	loop_timer_arm(&t->throttle, THROTTLE_CHECK_MS);
}

/* Core lock held: the emulator published a snapshot, matched a watch, or has room again. */
static void on_emu(struct loop_fd *lf, uint32_t events, void *arg)
{
	struct term *t = arg;

	(void)lf;
	(void)events;
	termemu_clear_fd(t->emu);
	waitq_wake(&t->screenq);
	if (t->throttled && termemu_room(t->emu) > 0)
		unthrottle(t);
}

/* Core lock held: writes what the master takes of the queue. */
void term_flush_input(struct term *t)
{
	size_t before = t->inlen;

	while (t->inlen && t->master >= 0 && t->lf) {
		ssize_t n = write(t->master, t->in, t->inlen);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0 && errno != EAGAIN)
				t->inlen = 0; /* the terminal is gone: nothing will read it */
			break;
		}
		memmove(t->in, t->in + n, t->inlen - (size_t)n);
		t->inlen -= (size_t)n;
	}
	if (t->inlen < before)
		waitq_wake(&t->inq);
	watch_master(t);
}

static void stop_watching(struct term *t)
{
	if (t->lf)
		loop_del_fd(t->lf);
	t->lf = NULL;
}

/* Core lock held: reads what the master has (READS_PER_WAKE chunks, READS_AT_EXIT with all),
 * no more than the emulator has room for unless all (once the program ended or closed the pty:
 * what is left is what the pty held). */
static void drain_master(struct term *t, bool all)
{
	char buf[READ_CHUNK];

	for (int i = 0; t->master >= 0 && i < (all ? READS_AT_EXIT : READS_PER_WAKE); i++) {
		size_t room = all ? sizeof(buf) : termemu_room(t->emu);
		ssize_t n;

		if (room == 0) {
			throttle(t);
			break;
		}
		n = read(t->master, buf, room < sizeof(buf) ? room : sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* EIO: no slave is open any more; nothing more will come */
			if (n == 0 || errno != EAGAIN)
				stop_watching(t);
			break;
		}
		termring_put(&t->ring, buf, (size_t)n);
		termemu_push(t->emu, buf, (size_t)n);
		waitq_wake(&t->outq);
	}
}

static void on_master(struct loop_fd *lf, uint32_t events, void *arg)
{
	struct term *t = arg;

	(void)lf;
	/* a hang-up is reported even while the master is not watched for input: then what is
	 * left is read whole, or it would be reported for ever */
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		drain_master(t, events & (EPOLLHUP | EPOLLERR));
	if (events & EPOLLOUT)
		term_flush_input(t);
}

static void on_pty(struct proc *p, int master)
{
	struct term *t = container_of(p, struct term, proc);
	struct winsize ws = {.ws_row = (unsigned short)t->rows, .ws_col = (unsigned short)t->cols};

	if (t->master >= 0) { /* a second STARTED for it: the launcher says nonsense */
		close(master);
		return;
	}
	t->master = master;
	t->state = TS_RUNNING;
	/* a resize while it was starting */
	ioctl(master, TIOCSWINSZ, &ws);
	t->lf = loop_add_fd(master, EPOLLIN, on_master, t);
	term_flush_input(t);
}

static void journal_term_start(const struct term *t)
{
	struct jrec r;

	jrec_begin(&r, "term.start", session_id(t->c.s));
	jrec_str(&r, "term", t->c.name);
	if (t->cmd)
		jrec_strn(&r, "cmd", t->cmd, t->cmdlen);
	jrec_commit(&r);
}

static void journal_term_end(const struct term *t, int wstatus)
{
	struct jrec r;

	jrec_begin(&r, "term.end", session_id(t->c.s));
	jrec_str(&r, "term", t->c.name);
	if (WIFSIGNALED(wstatus)) {
		jrec_int(&r, "signal", WTERMSIG(wstatus));
		jrec_str(&r, "reason", t->c.removed ? "killed" : "signal");
	} else {
		jrec_int(&r, "exit", WEXITSTATUS(wstatus));
		jrec_str(&r, "reason", "exit");
	}
	jrec_commit(&r);
}

static void on_exit_term(struct proc *p, int wstatus)
{
	struct term *t = container_of(p, struct term, proc);

	if (p->start_err)
		log_warnx("terminal %s: the launcher could not start it: %s", t->c.name,
			  strerror(p->start_err));
	/* Nothing of its tree outlives it; once gone, all it wrote is in the master. A removed
	 * terminal's tree was killed then (and its group may be gone with its session's). */
	if (!t->c.removed)
		t->leftovers = cgroup_kill_tree(t->c.cg);
	if (!t->c.cg)
		signal_tree(t, SIGKILL);
	drain_master(t, true);
	stop_watching(t);
	loop_timer_cancel(&t->grace);
	loop_timer_cancel(&t->throttle);
	t->state = TS_ENDED;
	t->wstatus = wstatus;
	journal_term_end(t, wstatus);
	t->inlen = 0;
	waitq_wake(&t->outq);
	waitq_wake(&t->inq);
	waitq_wake(&t->screenq);
	term_unref(t); /* the running program's reference */
}

/* Core lock held. */
static int start_locked(struct term *t, const char *cmd, size_t len)
{
	char *argv[] = {session_cfg->shell, "-i", NULL, NULL};
	struct envlist env;
	int cgfds[4], ncg;

	if (t->c.removed || session_removed_locked(t->c.s))
		return -ENOENT;
	if (t->state != TS_IDLE)
		return -EBUSY;
	if ((ncg = cgroup_join_fds(t->c.cg, cgfds, 4)) < 0)
		return ncg;
	if (cmd) {
		t->cmd = xstrndup(cmd, len);
		t->cmdlen = len;
		argv[1] = "-c";
		argv[2] = t->cmd;
	}
	session_next_env(t->c.s, &env);
	envlist_unset(&env, "SHLVL");
	envlist_put(&env, TERM_ENV);
	t->proc.on_exit = on_exit_term;
	t->proc.on_pty = on_pty;
	launch_start_pty(&t->proc, session_cwd_locked(t->c.s), argv, env.v, cgfds, ncg, t->rows, t->cols);
	envlist_free(&env);
	t->state = TS_STARTING;
	journal_term_start(t);
	session_child_ref(&t->c); /* held until the program is gone */
	return 0;
}

int term_start(struct term *t, const char *cmd, size_t len)
{
	int rc;

	if (memchr(cmd, '\0', len))
		return -EINVAL;
	core_lock();
	rc = start_locked(t, cmd, len);
	core_unlock();
	return rc;
}

int term_cmd_settable(struct term *t)
{
	int rc;

	core_lock();
	rc = t->c.removed ? -ENOENT : t->state != TS_IDLE ? -EBUSY : 0;
	core_unlock();
	return rc;
}

char *term_cmd(struct term *t, size_t *len)
{
	char *text;

	core_lock();
	*len = t->cmdlen;
	text = xmemdup(t->cmd ? t->cmd : "", t->cmdlen + 1);
	core_unlock();
	return text;
}

ssize_t term_input(struct term *t, const char *buf, size_t len, struct waiter *w)
{
	ssize_t rc;
	size_t n;

	core_lock();
	if (t->state == TS_IDLE && (rc = start_locked(t, NULL, 0)) < 0)
		goto out;
	if (t->c.removed) {
		rc = -ENOENT;
	} else if (t->state == TS_ENDED) {
		rc = -EIO;
	} else if (t->inlen == TERM_IN_MAX) {
		rc = -EAGAIN;
		if (w)
			waitq_add(&t->inq, w);
	} else {
		n = TERM_IN_MAX - t->inlen < len ? TERM_IN_MAX - t->inlen : len;
		memcpy(t->in + t->inlen, buf, n);
		t->inlen += n;
		term_flush_input(t);
		rc = (ssize_t)n;
	}
out:
	core_unlock();
	return rc;
}

/* Core lock held: whether it can still write output. */
bool term_live(const struct term *t)
{
	return t->state != TS_ENDED && !(t->c.removed && t->state == TS_IDLE);
}

int term_out_read(struct term *t, uint64_t *off, char *buf, size_t size, size_t *n,
		  struct waiter *w)
{
	int rc = 0;

	core_lock();
	if (*off < termring_oldest(&t->ring))
		*off = termring_oldest(&t->ring);
	*n = termring_get(&t->ring, *off, buf, size);
	if (*n == 0 && *off >= t->ring.end && term_live(t)) {
		rc = -EAGAIN;
		if (w)
			waitq_add(&t->outq, w);
	}
	core_unlock();
	return rc;
}

bool term_out_poll(struct term *t, uint64_t pos, struct waiter *w)
{
	bool ready;

	core_lock();
	ready = pos < t->ring.end || !term_live(t);
	if (!ready && w)
		waitq_add(&t->outq, w);
	core_unlock();
	return ready;
}

uint64_t term_out_end(struct term *t)
{
	uint64_t end;

	core_lock();
	end = t->ring.end;
	core_unlock();
	return end;
}

struct termsnap *term_snapshot(struct term *t, bool settled, bool *broken)
{
	return termemu_snapshot(t->emu, settled ? CATCHUP_MS : 0, broken);
}

char *term_screen(struct term *t, size_t *len, bool settled)
{
	bool broken;
	struct termsnap *s = term_snapshot(t, settled, &broken);
	char *text = termsnap_text(s, broken ? BROKEN_NOTICE : NULL, len);

	termsnap_unref(s);
	return text;
}

static void forget(struct session_child *c)
{
	struct term *t = term_of(c);

	t->c.removed = true;
	session_child_unlink(&t->c);
	if (t->state == TS_RUNNING || t->state == TS_STARTING) {
		t->killed = true;
		/* gone when rmdir returns; its exit report comes later */
		if (t->c.cg)
			cgroup_kill_tree(t->c.cg);
		/* the launcher may not have started it yet: this reaches it once it has */
		launch_signal(&t->proc, SIGKILL, true);
	}
	/* a terminal made right after this rmdir has its room */
	termemu_give_back(t->emu);
	/* nothing more of the emulator is waited for: readers of wait see the removal */
	loop_del_fd(t->emu_lf);
	t->emu_lf = NULL;
	loop_timer_cancel(&t->wait_timer);
	loop_timer_cancel(&t->throttle);
	waitq_wake(&t->outq);
	waitq_wake(&t->inq);
	waitq_wake(&t->screenq);
	term_unref(t);
}

int term_remove(struct session *s, const char *name)
{
	return session_child_remove(s, SESSION_CHILD_TERM, name);
}

