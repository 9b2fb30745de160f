/* Running a context's cells (see context_priv.h): the queue, one cell at a time on the driver,
 * the events it sends, per-cell timeouts, interrupt, kill and restart, and the driver's end. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cgroup_mem.h"
#include "context_priv.h"
#include "json.h"
#include "log.h"
#include "verb.h"
#include "xmalloc.h"

static void timer_fired(struct loop_timer *t);

static void set_timer(struct context *c, enum ctx_timer phase, uint64_t ms)
{
	c->phase = phase;
	c->timer.fn = timer_fired;
	if (phase == CT_NONE)
		loop_timer_cancel(&c->timer);
	else
		loop_timer_arm(&c->timer, ms);
}

/* A timeout interrupts the cell as ctl interrupt does; a cell that does not end within the
 * kill grace then loses its interpreter. */
static void timer_fired(struct loop_timer *t)
{
	struct context *c = container_of(t, struct context, timer);
	enum ctx_timer phase = c->phase;

	c->phase = CT_NONE;
	if (!c->current)
		return;
	if (phase == CT_TIMEOUT) {
		c->timed_out = true;
		context_driver_signal(c, SIGINT);
		set_timer(c, CT_GRACE, ctx_cfg->kill_grace_ms);
	} else if (phase == CT_GRACE) {
		context_driver_kill(c, DK_TIMEOUT);
	}
}

/* Core lock held: the oldest ended cells leave the history past [session] history cells, or
 * CONTEXT_RESULTS_MAX bytes of displayed values. */
static void trim_history(struct context *c)
{
	struct cell *cell, *next;
	size_t bytes = 0;

	TAILQ_FOREACH(cell, &c->cells, link)
	bytes += cell->res_bytes;
	for (cell = TAILQ_FIRST(&c->cells);
	     cell && (c->ncells > ctx_cfg->history || bytes > CONTEXT_RESULTS_MAX); cell = next) {
		next = TAILQ_NEXT(cell, link);
		if (cell->st == CELL_QUEUED || cell == c->current)
			continue;
		TAILQ_REMOVE(&c->cells, cell, link);
		c->ncells--;
		bytes -= cell->res_bytes;
		cell_unref(cell);
	}
}

static struct cell *next_queued(struct context *c)
{
	struct cell *cell;

	TAILQ_FOREACH(cell, &c->cells, link)
	if (cell->st == CELL_QUEUED)
		return cell;
	return NULL;
}

/* Core lock held: a cell ends with an error the daemon makes (no traceback). */
static void fail_cell(struct cell *cell, enum cell_state st, const char *name, const char *value)
{
	cell_set_error(cell, xstrdup(name), xstrdup(value), xstrdup(""));
	cell_finish(cell, st);
}

static void start_driver(struct context *c, struct cell *head)
{
	struct envlist env;
	char why[256];
	int rc;

	context_env(c, &env);
	rc = context_driver_start(c, &env);
	envlist_free(&env);
	if (rc == 0)
		return;
	log_warnx("context %s: driver not started: %s", c->name, strerror(-rc));
	if (head) {
		snprintf(why, sizeof(why), "the interpreter could not be started: %s",
			 strerror(-rc));
		fail_cell(head, CELL_ERROR, "DriverError", why);
	}
}

void context_pump(struct context *c)
{
	struct cell *cell;

	while (!c->removed && !c->current && !c->drv.exiting) {
		cell = next_queued(c);
		if (!cell && !(c->want_restart && !c->drv.running))
			return;
		if (!c->drv.running) {
			c->want_restart = false;
			start_driver(c, cell);
			if (c->drv.running || !cell)
				return;
			continue; /* that cell failed: the next one tries again */
		}
		if (c->drv.st != DRV_READY || c->drv.kill != DK_NONE || !cell)
			return;
		c->current = cell;
		c->interrupted = c->timed_out = false;
		cell->st = CELL_RUNNING;
		run_begin(cell->run);
		context_driver_send_run(c, cell->run->cmd, cell->run->cmdlen);
		if (c->timeout_ms)
			set_timer(c, CT_TIMEOUT, c->timeout_ms);
	}
}

/* Core lock held: the current cell is done; its state from how it ended. */
static void end_current(struct context *c, enum cell_state st)
{
	struct cell *cell = c->current;

	set_timer(c, CT_NONE, 0);
	context_driver_drain(c);
	c->current = NULL;
	cell_finish(cell, st);
	trim_history(c);
}

/* What a done cell's state is: an error, unless it was our SIGINT that raised it (Python's
 * KeyboardInterrupt, the JavaScript driver's Interrupted). */
static enum cell_state done_state(struct context *c)
{
	const char *err = c->current->err_name;
	bool sigint = err && (!strcmp(err, "KeyboardInterrupt") || !strcmp(err, "Interrupted"));

	if (!err)
		return CELL_DONE;
	if (sigint && c->timed_out)
		return CELL_TIMEOUT;
	if (sigint && c->interrupted)
		return CELL_INTERRUPTED;
	return CELL_ERROR;
}

/* What is wrong with an event where it came, or NULL. */
static const char *misplaced(const struct context *c, enum ctx_ev ev)
{
	if (ev == EV_READY && c->drv.st != DRV_STARTING)
		return "a second ready";
	if (ev == EV_ERROR && c->drv.st != DRV_STARTING && !c->current)
		return "an error outside a cell";
	if (ev == EV_DONE && !c->current)
		return "a done outside a cell";
	return NULL;
}

void context_event(struct context *c, struct ctx_event *ev)
{
	const char *bad = misplaced(c, ev->ev);

	if (c->drv.kill != DK_NONE)
		return;
	if (bad) {
		context_driver_violation(c, bad);
		return;
	}
	switch (ev->ev) {
	case EV_READY:
		c->drv.st = DRV_READY;
		break;
	case EV_RESULT:
		/* Displayed after its cell ended (a thread): nobody to give it to. */
		if (c->current)
			cell_add_result(c->current, ev);
		return;
	case EV_ERROR:
		/* A driver that cannot come up may say why before it exits. */
		if (c->drv.st == DRV_STARTING) {
			context_driver_note(c, ev->name, ev->value);
			return;
		}
		cell_set_error(c->current, ev->name, ev->value, ev->traceback);
		ev->name = ev->value = ev->traceback = NULL;
		return;
	case EV_DONE:
		end_current(c, done_state(c));
		break;
	}
	context_pump(c);
}

/* Why the interpreter went away; with its note (what it wrote before it was ready) when it
 * never came up. */
static char *death_text(struct context *c, int wstatus, uint64_t oom, bool with_note)
{
	struct context_driver *d = &c->drv;

	if (d->kill == DK_PROTOCOL)
		return xasprintf("the interpreter was killed: it sent %s", d->kill_why);
	if (oom)
		return xstrdup("the interpreter was killed: out of memory");
	if (WIFSIGNALED(wstatus))
		return xasprintf("the interpreter was killed by signal %d (%s)", WTERMSIG(wstatus),
				 strsignal(WTERMSIG(wstatus)));
	return xasprintf("the interpreter exited with status %d%s%s", WEXITSTATUS(wstatus),
			 with_note && d->notelen ? ": " : "", with_note ? d->note : "");
}

void context_driver_gone(struct context *c, int wstatus)
{
	uint64_t oom = cgroup_mem_oom_kills(c->cg, true);
	struct cell *head;
	char *why;

	if (c->current) {
		struct cell *cell = c->current;
		enum cell_state st = c->drv.kill == DK_KILLED	 ? CELL_KILLED
				     : c->drv.kill == DK_TIMEOUT ? CELL_TIMEOUT
								 : CELL_ERROR;

		why = death_text(c, wstatus, oom > c->oom_seen, false);
		cell_set_error(cell,
			       xstrdup(st == CELL_KILLED	    ? "Killed"
				       : st == CELL_TIMEOUT	    ? "TimeoutError"
				       : c->drv.kill == DK_PROTOCOL ? "ProtocolError"
								    : "InterpreterDied"),
			       why, xstrdup(""));
		end_current(c, st);
	} else if (c->drv.st == DRV_STARTING && c->drv.kill != DK_KILLED &&
		   (head = next_queued(c))) {
		/* It never came up: the cell waiting for it says why; the next tries again. */
		why = death_text(c, wstatus, false, true);
		fail_cell(head, CELL_ERROR, "DriverError", why);
		free(why);
	}
	c->oom_seen = oom;
	c->drv.st = DRV_NONE;
	context_pump(c);
}

int context_submit(struct context *c, const char *code, size_t len, unsigned *n)
{
	unsigned queued = 0;
	struct cell *cell;
	char *base;
	int err = 0;

	if (memchr(code, '\0', len))
		return -EINVAL;
	if (len > CONTEXT_CODE_MAX)
		return -EFBIG;
	if (utf8_prefix(code, len, NULL) != len)
		return -EILSEQ;
	core_lock();
	TAILQ_FOREACH(cell, &c->cells, link)
	queued += cell->st == CELL_QUEUED;
	if (c->removed || queued >= CONTEXT_QUEUE_MAX || c->next_n >= CONTEXT_CELLS_MAX) {
		core_unlock();
		return c->removed ? -ENOENT : queued >= CONTEXT_QUEUE_MAX ? -EAGAIN : -ENOSPC;
	}
	base = xasprintf("%s/x%u-%u", ctx_spool_dir, c->serial, c->next_n + 1);
	cell = cell_new(c->next_n + 1, code, len, base, ctx_cfg->output_cap, &err);
	free(base);
	if (!cell) {
		core_unlock();
		return err ? err : -EIO;
	}
	run_journal_as(cell->run, "cell", NULL, "context", c->name);
	c->submitted = true;
	c->next_n++;
	c->ncells++;
	if (n)
		*n = cell->n;
	TAILQ_INSERT_TAIL(&c->cells, cell, link);
	trim_history(c);
	context_pump(c);
	core_unlock();
	return 0;
}

/* The verbs of a context's ctl, applied with the core lock held. */
static int verb_timeout(void *obj, const char *name, const struct verb_value *v)
{
	struct context *c = obj;

	(void)name;
	c->timeout_ms = v->ms;
	return 0;
}

static int verb_restart(void *obj, const char *name, const struct verb_value *v)
{
	struct context *c = obj;

	(void)name;
	(void)v;
	if (c->removed)
		return -ENOENT;
	c->want_restart = true;
	if (c->drv.running)
		context_driver_kill(c, DK_KILLED);
	else
		context_pump(c);
	return 0;
}

static int verb_kill(void *obj, const char *name, const struct verb_value *v)
{
	struct context *c = obj;

	(void)name;
	(void)v;
	if (c->removed)
		return -ENOENT;
	if (!c->drv.running)
		return -ESRCH;
	context_driver_kill(c, DK_KILLED);
	return 0;
}

static int verb_interrupt(void *obj, const char *name, const struct verb_value *v)
{
	struct context *c = obj;

	(void)name;
	(void)v;
	if (c->removed)
		return -ENOENT;
	if (!c->drv.running || !c->current)
		return -ESRCH;
	c->interrupted = true;
	context_driver_signal(c, SIGINT);
	return 0;
}

static const struct verb verbs[] = {
    {"timeout", VA_MS, verb_timeout},
    {"interrupt", VA_NONE, verb_interrupt},
    {"kill", VA_NONE, verb_kill},
    {"restart", VA_NONE, verb_restart},
};

int context_ctl(struct context *c, const char *line, size_t len)
{
	int rc;

	if (!c)
		return verb_run(VERBS(verbs), NULL, line, len);
	core_lock();
	rc = verb_run(VERBS(verbs), c, line, len);
	core_unlock();
	return rc;
}
