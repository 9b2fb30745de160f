/* The snapshots' worker: one thread that takes, restores and deletes in the order asked, so a
 * copy of any size never runs on the loop thread or holds a FUSE request's thread, and the
 * control plane answers meanwhile. A take or restore completes the ticket its mkdir, clone or
 * ctl waits on. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "loop.h"
#include "snapshot_priv.h"
#include "treesync.h"
#include "xmalloc.h"

struct job {
	enum snap_job kind;
	struct snapshot *s;
	char *arg;
	TAILQ_ENTRY(job) link;
};

static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qcond = PTHREAD_COND_INITIALIZER;
static TAILQ_HEAD(, job) queue = TAILQ_HEAD_INITIALIZER(queue);
static struct snapshot *running; /* qlock: the snapshot the job under way works on */
static bool stopping, started;
static bool cancel; /* the running sync's: set at stop, or when its snapshot is cancelled */
static pthread_t thread;

const bool *snap_work_cancel(void)
{
	return &cancel;
}

void snap_work_queue(enum snap_job kind, struct snapshot *s, const char *arg)
{
	struct job *j = xcalloc(1, sizeof(*j));

	j->kind = kind;
	j->s = s;
	j->arg = arg ? xstrdup(arg) : NULL;
	if (s)
		s->refs++; /* snap_lock held by the caller */
	pthread_mutex_lock(&qlock);
	TAILQ_INSERT_TAIL(&queue, j, link);
	pthread_cond_signal(&qcond);
	pthread_mutex_unlock(&qlock);
}

void snap_work_cancel_take(struct snapshot *s)
{
	pthread_mutex_lock(&qlock);
	if (running == s)
		__atomic_store_n(&cancel, true, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&qlock);
}

static void finish_take(struct snapshot *s, int rc)
{
	struct ticket *t;

	snap_journal("snapshot.take", s->name, rc);
	pthread_mutex_lock(&snap_lock);
	if (rc < 0) {
		snap_drop_locked(s, rc);
		pthread_mutex_unlock(&snap_lock);
		return;
	}
	t = s->done;
	s->done = NULL;
	pthread_mutex_unlock(&snap_lock);
	snap_ticket_done(&t, 0);
}

static void (*restore_hook)(void);

void snapshots_set_restore_hook(void (*fn)(void))
{
	restore_hook = fn;
}

struct restored {
	struct ticket *t;
	int rc;
};

/* Loop thread: the hook, then the close waiting on the restore is answered. */
static void restored_on_loop(void *arg)
{
	struct restored *r = arg;

	restore_hook();
	snap_ticket_done(&r->t, r->rc);
	free(r);
}

static void finish_restore(struct snapshot *s, int rc, uint64_t t0)
{
	struct restored *r;
	struct ticket *t;

	pthread_mutex_lock(&snap_lock);
	s->state = SS_READY;
	s->phase = NULL;
	s->restored = true;
	s->restore_rc = rc;
	s->restore_ms = snap_now_ms() - t0;
	s->progress = NULL;
	t = s->done;
	s->done = NULL;
	pthread_mutex_unlock(&snap_lock);
	snap_journal("snapshot.restore", s->name, rc);
	if (!restore_hook || !t) {
		snap_ticket_done(&t, rc);
		return;
	}
	r = xmalloc(sizeof(*r));
	*r = (struct restored){t, rc};
	loop_defer(restored_on_loop, r);
}

static void run(struct job *j)
{
	uint64_t t0 = snap_now_ms();
	int rc;

	switch (j->kind) {
	case JOB_TAKE:
		rc = j->s->removed ? -ECANCELED : snap_take_run(j->s, j->arg ? j->arg : "");
		finish_take(j->s, rc);
		break;
	case JOB_RESTORE:
		rc = snap_restore_run(j->s, j->arg);
		finish_restore(j->s, rc, t0);
		break;
	case JOB_DELETE:
		if ((rc = tree_remove(snap_dir_fd, j->arg)) < 0)
			log_warnx("snapshots: removing %s: %s", j->arg, strerror(-rc));
		break;
	}
}

static void *worker(void *unused)
{
	struct job *j;

	(void)unused;
	pthread_mutex_lock(&qlock);
	for (;;) {
		while (!stopping && TAILQ_EMPTY(&queue))
			pthread_cond_wait(&qcond, &qlock);
		if (stopping)
			break;
		j = TAILQ_FIRST(&queue);
		TAILQ_REMOVE(&queue, j, link);
		running = j->s;
		__atomic_store_n(&cancel, false, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&qlock);
		run(j);
		if (j->s)
			snapshot_unref(j->s);
		free(j->arg);
		free(j);
		pthread_mutex_lock(&qlock);
		running = NULL;
	}
	pthread_mutex_unlock(&qlock);
	return NULL;
}

int snap_work_start(void)
{
	int rc = pthread_create(&thread, NULL, worker, NULL);

	started = rc == 0;
	return -rc;
}

void snap_work_stop(void)
{
	struct job *j;

	if (!started)
		return;
	pthread_mutex_lock(&qlock);
	stopping = true;
	__atomic_store_n(&cancel, true, __ATOMIC_RELAXED);
	pthread_cond_signal(&qcond);
	pthread_mutex_unlock(&qlock);
	pthread_join(thread, NULL);
	started = false;
	/* What never ran: its tickets are answered by the table's shutdown. */
	while ((j = TAILQ_FIRST(&queue))) {
		TAILQ_REMOVE(&queue, j, link);
		if (j->s)
			snapshot_unref(j->s);
		free(j->arg);
		free(j);
	}
	stopping = false;
}
