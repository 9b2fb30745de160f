/* Runs: creation with their spool files, the queued -> running -> done transitions, and the
 * read/wait primitives the control files are built on. */
#include "run.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/wait.h>

#include "loop.h"
#include "escape.h"
#include "xmalloc.h"

static void (*begin_hook)(void);
static bool (*end_hook)(void);

void run_set_hooks(void (*begin)(void), bool (*end)(void))
{
	begin_hook = begin;
	end_hook = end;
}

static struct run *run_alloc(unsigned n, const char *cmd, size_t cmdlen)
{
	struct run *r = xcalloc(1, sizeof(*r));

	r->refs = 1;
	r->n = n;
	r->cmd = xstrndup(cmd, cmdlen);
	r->cmdlen = cmdlen;
	r->state = RUN_QUEUED;
	waitq_init(&r->doneq);
	clock_gettime(CLOCK_REALTIME, &r->submitted);
	return r;
}

struct run *run_new(unsigned n, const char *cmd, size_t cmdlen, const char *spool_base,
		    uint64_t output_cap, int *err)
{
	struct run *r = run_alloc(n, cmd, cmdlen);
	static const char *const suffix[RUN_STREAMS] = {"out", "err", "all"};

	r->out[1].fd = r->out[2].fd = -1;
	for (int i = 0; i < RUN_STREAMS; i++) {
		char *path = xasprintf("%s.%s", spool_base, suffix[i]);
		int rc = spool_open(&r->out[i], path, (off_t)output_cap);

		free(path);
		if (rc < 0) {
			*err = rc;
			r->out[i].fd = -1;
			run_unref(r);
			return NULL;
		}
	}
	r->out[RUN_STDOUT].mirror = r->out[RUN_STDERR].mirror = &r->out[RUN_OUTPUT];
	spool_budget_add(&r->budget, r->out, RUN_STREAMS);
	return r;
}

struct run *run_refused(unsigned n, const char *cmd, size_t cmdlen, int err, const char *what)
{
	struct run *r = run_alloc(n, cmd, cmdlen);

	for (int i = 0; i < RUN_STREAMS; i++)
		spool_empty(&r->out[i]);
	run_set_error(r, err, what);
	r->state = RUN_DONE;
	r->status = RUN_EXIT_UNRUN;
	r->started = r->ended = r->submitted;
	return r;
}

void run_set_error(struct run *r, int err, const char *what)
{
	if (r->error)
		return;
	r->error = err ? xasprintf("%s: %s: %s", strerrorname_np(err), what, strerror(err))
		       : xstrdup(what);
}

void run_ref(struct run *r)
{
	__atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
}

void run_unref(struct run *r)
{
	if (__atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	spool_budget_remove(&r->budget);
	for (int i = 0; i < RUN_STREAMS; i++)
		spool_close(&r->out[i]);
	free(r->error);
	free(r->jsid);
	free(r->jvalue);
	free(r->cmd);
	free(r);
}

void run_begin(struct run *r)
{
	bool first = r->state == RUN_QUEUED;

	if (first && begin_hook)
		begin_hook();
	r->state = RUN_RUNNING;
	clock_gettime(CLOCK_REALTIME, &r->started);
	if (first)
		run_journal_begin(r);
	waitq_wake(&r->doneq);
}

int run_status_from_wait(int wstatus)
{
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return WEXITSTATUS(wstatus);
}

static double seconds(struct timespec a, struct timespec b)
{
	return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

char *run_error_text(const struct run *r)
{
	if (r->error)
		return xstrdup(r->error);
	for (int i = 0; i < RUN_STREAMS; i++) {
		static const char *const names[RUN_STREAMS] = {"stdout", "stderr", "output"};
		int err = r->out[i].err;

		if (err)
			return xasprintf("%s: writing its %s spool: %s", strerrorname_np(err),
					 names[i], strerror(err));
	}
	return NULL;
}

char *run_describe(const struct run *r)
{
	static const char *const states[] = {"queued", "running", "done"};
	struct timespec now, end;
	char exit_text[16] = "-", started[32] = "-", duration[32] = "-";
	char *text, *error = run_error_text(r);

	clock_gettime(CLOCK_REALTIME, &now);
	end = r->state == RUN_DONE ? r->ended : now;
	if (r->state != RUN_QUEUED) {
		snprintf(started, sizeof(started), "%lld.%03ld", (long long)r->started.tv_sec,
			 r->started.tv_nsec / 1000000);
		snprintf(duration, sizeof(duration), "%.3f", seconds(r->started, end));
	}
	if (r->state == RUN_DONE)
		snprintf(exit_text, sizeof(exit_text), "%d", r->status);
	text = xasprintf("command %u\nrun_state %s\npid %d\nstarted %s\nduration %s\nexit %s\n"
			 "timed_out %s\nkilled %s\nsignal %d\ntruncated %s\ncommand_timeout %llu\n"
			 "oom_killed %s\n%s",
			 r->n, states[r->state], (int)r->shell_pid, started, duration, exit_text,
			 r->timed_out ? "yes" : "no", r->killed ? "yes" : "no",
			 r->killed ? r->kill_sig : 0,
			 r->out[0].truncated || r->out[1].truncated ? "yes" : "no",
			 (unsigned long long)r->timeout_ms, r->oom_kills ? "yes" : "no",
			 /* only when it was: the spool budget emptied its output */
			 r->budget.dropped ? "output_dropped yes\n" : "");
	return esc_status_error(text, error); /* the line only when something went wrong */
}

char *run_status(struct run *r)
{
	char *text;

	core_lock();
	text = run_describe(r);
	core_unlock();
	return text;
}

/* The end becomes visible: status, end of output, and whoever waits for it. */
static void publish_end(struct run *r)
{
	r->state = RUN_DONE;
	r->ending = false;
	for (int i = 0; i < RUN_STREAMS; i++)
		spool_finish(&r->out[i]);
	run_journal_end(r);
	waitq_wake(&r->doneq);
}

static void publish_end_synced(void *arg)
{
	struct run *r = arg;

	core_lock();
	publish_end(r);
	core_unlock();
	run_unref(r);
}

void run_end(struct run *r, int status)
{
	bool later;

	if (r->state == RUN_DONE || r->ending)
		return;
	/* The hook runs whether or not the loop can still catch up. */
	later = r->state == RUN_RUNNING && end_hook && end_hook() && loop_running();
	clock_gettime(CLOCK_REALTIME, &r->ended);
	if (r->state == RUN_QUEUED) /* it never started: it took no time */
		r->started = r->ended;
	r->status = status;
	if (later) {
		r->ending = true;
		run_ref(r);
		loop_after_sync(publish_end_synced, r);
		return;
	}
	publish_end(r);
}

int run_read_extent(struct run *r, enum run_stream s, off_t off, size_t size, int *fd, size_t *n,
		    struct waiter *w)
{
	struct spool *sp = &r->out[s];
	int rc = 0;

	core_lock();
	*fd = spool_read_fd(sp);
	if (off < sp->size) {
		off_t avail = sp->size - off;

		*n = (size_t)avail < size ? (size_t)avail : size;
	} else if (sp->done) {
		*n = 0;
	} else {
		rc = -EAGAIN;
		if (w)
			waitq_add(&sp->waiters, w);
	}
	core_unlock();
	return rc;
}

int run_wait_exit(struct run *r, int *status, struct waiter *w)
{
	int rc = 0;

	core_lock();
	if (r->state == RUN_DONE) {
		*status = r->status;
	} else {
		rc = -EAGAIN;
		if (w)
			waitq_add(&r->doneq, w);
	}
	core_unlock();
	return rc;
}

void run_stream_stat(struct run *r, enum run_stream s, off_t *size, struct timespec *mtime)
{
	core_lock();
	*size = r->out[s].size;
	*mtime = r->out[s].mtime;
	core_unlock();
}

bool run_poll(struct run *r, enum run_stream s, off_t off, struct waiter *w)
{
	bool yes;

	core_lock();
	yes = off < r->out[s].size || r->out[s].done;
	if (!yes && w)
		waitq_add(&r->out[s].waiters, w);
	core_unlock();
	return yes;
}
