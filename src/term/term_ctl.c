/* A terminal's control files in the core (see term.h): size, ctl verbs, exit, status, and wait:
 * its pattern, and its readers, whose matching runs on the emulator's thread (termemu.h) or the
 * reader's own, never on the loop thread. */
#include "term.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#include "run.h"
#include "rx.h"
#include "verb.h"
#include "term_priv.h"
#include "termscreen.h"
#include "xmalloc.h"

int term_size_parse(const char *text, size_t len, unsigned *rows, unsigned *cols)
{
	char buf[32], *end, *p;
	unsigned long r, c;

	if (len && text[len - 1] == '\n')
		len--;
	if (len == 0 || len >= sizeof(buf) || memchr(text, '\0', len))
		return -EINVAL;
	memcpy(buf, text, len);
	buf[len] = '\0';
	if (buf[0] < '1' || buf[0] > '9')
		return -EINVAL;
	r = strtoul(buf, &end, 10);
	if (*end != ' ' || end[1] < '1' || end[1] > '9')
		return -EINVAL;
	p = end + 1;
	c = strtoul(p, &end, 10);
	if (*end || r > TERM_ROWS_MAX || c > TERM_COLS_MAX || c < TERMSCREEN_COLS_MIN)
		return -EINVAL;
	*rows = (unsigned)r;
	*cols = (unsigned)c;
	return 0;
}

int term_resize(struct term *t, unsigned rows, unsigned cols)
{
	struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
	struct termemu_limits lim = term_limits();
	int rc;

	core_lock();
	rc = t->c.removed ? -ENOENT : termemu_resize(t->emu, rows, cols, &lim);
	if (rc == 0) {
		t->rows = rows;
		t->cols = cols;
		/* the kernel sends SIGWINCH to the terminal's foreground group */
		if (t->master >= 0 && t->state != TS_ENDED)
			ioctl(t->master, TIOCSWINSZ, &ws);
	}
	core_unlock();
	return rc;
}

char *term_size_text(struct term *t)
{
	char *text;

	core_lock();
	text = xasprintf("%u %u\n", t->rows, t->cols);
	core_unlock();
	return text;
}

/* Core lock held: the byte a key would send, as typed. */
static int type_key(struct term *t, char key)
{
	if (t->inlen == TERM_IN_MAX)
		return -EAGAIN;
	t->in[t->inlen++] = key;
	term_flush_input(t);
	return 0;
}

/* The verbs of a terminal's ctl, applied with the core lock held. */
static int verb_kill(void *obj, const char *name, const struct verb_value *v)
{
	struct term *t = obj;

	(void)name;
	if (t->state != TS_RUNNING && t->state != TS_STARTING)
		return -ESRCH;
	term_kill(t, v->sig);
	return 0;
}

/* interrupt and eof: the byte the key would send, as typed. */
static int verb_key(void *obj, const char *name, const struct verb_value *v)
{
	struct term *t = obj;

	(void)v;
	if (t->state != TS_RUNNING && t->state != TS_STARTING)
		return -ESRCH;
	return type_key(t, !strcmp(name, "interrupt") ? '\x03' : '\x04');
}

static const struct verb verbs[] = {
    {"kill", VA_SIGNAL, verb_kill},
    {"interrupt", VA_NONE, verb_key},
    {"eof", VA_NONE, verb_key},
};

int term_ctl(struct term *t, const char *line, size_t len)
{
	int rc;

	if (!t)
		return verb_run(VERBS(verbs), NULL, line, len);
	core_lock();
	rc = verb_run(VERBS(verbs), t, line, len);
	core_unlock();
	return rc;
}

int term_wait_exit(struct term *t, int *status, struct waiter *w)
{
	int rc = 0;

	core_lock();
	if (t->state == TS_ENDED) {
		*status = run_status_from_wait(t->wstatus);
	} else if (t->c.removed && t->state == TS_IDLE) {
		rc = -ENOENT;
	} else {
		rc = -EAGAIN;
		if (w)
			waitq_add(&t->outq, w);
	}
	core_unlock();
	return rc;
}

static const char *state_of(const struct term *t, int *sig)
{
	*sig = 0;
	switch (t->state) {
	case TS_IDLE:
		return "idle";
	case TS_STARTING:
		return "starting";
	case TS_RUNNING:
		return "running";
	default:
		break;
	}
	if (WIFSIGNALED(t->wstatus) || (t->killed && run_status_from_wait(t->wstatus) > 128)) {
		*sig = WIFSIGNALED(t->wstatus) ? WTERMSIG(t->wstatus)
					       : run_status_from_wait(t->wstatus) - 128;
		return "killed";
	}
	return run_status_from_wait(t->wstatus) == 0 ? "completed" : "failed";
}

char *term_status(struct term *t, bool settled)
{
	char exit_text[16] = "-";
	bool broken;
	/* before bytes_out, so that the cursor is no older than it */
	struct termsnap *snap = term_snapshot(t, settled, &broken);
	unsigned row = snap->cursor_row, col = snap->cursor_col;
	const char *state;
	char *text;
	int sig;

	termsnap_unref(snap);
	core_lock();
	state = state_of(t, &sig);
	if (t->state == TS_ENDED)
		snprintf(exit_text, sizeof(exit_text), "%d", run_status_from_wait(t->wstatus));
	text = xasprintf("name %s\nstate %s\npid %d\nrows %u\ncols %u\ncursor_row %u\n"
			 "cursor_col %u\nbytes_out %llu\nexit %s\nsignal %d\nleftovers %d\n",
			 t->c.name, state, t->state == TS_IDLE ? 0 : (int)t->proc.pid, t->rows,
			 t->cols, row, col, (unsigned long long)t->ring.end, exit_text, sig,
			 t->leftovers);
	core_unlock();
	return text;
}

uint64_t term_wait_ms(void)
{
	return session_cfg->term_wait_ms;
}

int term_set_pattern(struct term *t, const char *text, size_t len)
{
	struct rx *rx;

	if (len && text[len - 1] == '\n')
		len--;
	if (len == 0 || memchr(text, '\n', len) || rx_compile(text, len, &rx) < 0)
		return -EINVAL;
	rx_free(rx);
	core_lock();
	free(t->pattern);
	t->pattern = xstrndup(text, len);
	core_unlock();
	return 0;
}

char *term_pattern(struct term *t)
{
	char *text;

	core_lock();
	text = t->pattern ? xstrdup(t->pattern) : NULL;
	core_unlock();
	return text;
}

int term_watch_open(struct term *t, struct termemu_watch **w)
{
	char *pattern = term_pattern(t);
	struct rx *rx;
	int rc = pattern ? rx_compile(pattern, strlen(pattern), &rx) : -EINVAL;

	free(pattern);
	if (rc == 0)
		*w = termemu_watch_add(t->emu, rx);
	return rc;
}

void term_watch_close(struct termemu_watch *w)
{
	termemu_watch_remove(w);
}

void term_watch_scan(struct termemu_watch *w)
{
	termemu_watch_scan(w);
}

static void wait_timer_fired(struct loop_timer *lt)
{
	struct term *t = container_of(lt, struct term, wait_timer);

	waitq_wake(&t->screenq); /* readers past their deadline see it; the others wait again */
}

int term_watch_poll(struct term *t, struct termemu_watch *tw, uint64_t deadline_ns, char **line,
		    struct waiter *w)
{
	uint64_t now = loop_now_ns();
	int rc = -EAGAIN;
	bool final;

	/* Under the core lock no output is read meanwhile, so final holds for all the program
	 * wrote once it has ended; and on the loop thread this and the emulator's wake-up
	 * (on_emu) do not interleave: a match made after this look wakes the waiter queued
	 * below. */
	core_lock();
	if ((*line = termemu_watch_result(tw, &final))) {
		rc = 0;
	} else if (t->c.removed || (!term_live(t) && final)) {
		rc = 1;
	} else if (now >= deadline_ns) {
		rc = -ETIMEDOUT;
	} else if (w) {
		waitq_add(&t->screenq, w);
		if (!t->wait_timer.armed || t->wait_timer.deadline_ns > deadline_ns) {
			t->wait_timer.fn = wait_timer_fired;
			loop_timer_arm(&t->wait_timer, (deadline_ns - now + 999999) / 1000000);
		}
	}
	core_unlock();
	return rc;
}
