/* Background processes (see job.h): naming, starting through the launcher in their own
 * cgroup (their stdio is job_io.c's), kill and timeout, status, and watching for the port they
 * listen on. */
#include "job.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "cgroup_mem.h"
#include "cgroup.h"
#include "log.h"
#include "job_priv.h"
#include "ports.h"
#include "session_child.h"
#include "escape.h"
#include "verb.h"
#include "xmalloc.h"

/* How often a parked `ready` reader looks for a listening port. */
#define READY_POLL_MS 50
/* A start returns once the launcher has given the process's pid, or said it did not start, so
 * a client reading status right after its write never meets a running process with pid 0.
 * Bounded: a launcher being restarted can take longer, and status says starting meanwhile. */
#define START_WAIT_MS 2000

/* Taken inside the core lock (by the loop thread), never the other way round. */
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t start_cond = PTHREAD_COND_INITIALIZER;

static struct job *job_of(struct session_child *c)
{
	return c ? container_of(c, struct job, c) : NULL;
}

void job_unref(struct job *j)
{
	if (!session_child_unref(&j->c))
		return;
	if (j->run)
		run_unref(j->run);
	feed_free(&j->in);
	session_child_release(&j->c);
	free(j);
}

struct cgroup *job_cgroup(const struct job *j)
{
	return j->c.cg;
}

const char *job_name(const struct job *j)
{
	return j->c.name;
}

unsigned job_id(const struct job *j)
{
	return j->c.id;
}

struct job *job_find(struct session *s, const char *name)
{
	return job_of(session_child_get(s, SESSION_CHILD_JOB, name, 0));
}

struct job *job_find_id(struct session *s, unsigned id)
{
	return job_of(session_child_get(s, SESSION_CHILD_JOB, NULL, id));
}

/* Core lock held: kill, detach from the session, drop the list's reference. */
static void forget(struct session_child *c);

static const struct session_child_ops job_child_ops = {SESSION_CHILD_JOB, 'p', forget};

int job_create(struct session *s, const char *name)
{
	struct job *j;
	int rc;

	if (!session_id_valid(name, strlen(name)))
		return -EINVAL;
	core_lock();
	if ((rc = session_child_free_name(s, SESSION_CHILD_JOB, name)) < 0) {
		core_unlock();
		return rc;
	}
	j = xcalloc(1, sizeof(*j));
	j->out[0] = j->out[1] = -1;
	feed_init(&j->in);
	waitq_init(&j->readyq);
	session_child_add(&j->c, s, &job_child_ops, name);
	core_unlock();
	return 0;
}

size_t job_list(struct session *s, struct job_info **v)
{
	struct session_info *sv = NULL;
	size_t ns = 1, n = 0;

	if (!s)
		ns = session_list(&sv);
	*v = NULL;
	for (size_t i = 0; i < ns; i++) {
		struct session *cur = s ? s : session_find_serial(sv[i].serial);
		struct session_child *c;

		if (!cur)
			continue;
		core_lock();
		TAILQ_FOREACH(c, session_child_list(cur, SESSION_CHILD_JOB), link)
		{
			*v = xrealloc(*v, (n + 1) * sizeof(**v));
			snprintf((*v)[n].name, sizeof((*v)[n].name), "%s", c->name);
			snprintf((*v)[n].session, sizeof((*v)[n].session), "%s", session_id(cur));
			(*v)[n].id = c->id;
			(*v)[n++].serial = session_serial(cur);
		}
		core_unlock();
		if (!s)
			session_unref(cur);
	}
	free(sv);
	return n;
}

/* Signals the whole tree; without a cgroup, the process group. */
static void signal_tree(struct job *j, int sig)
{
	launch_signal_tree(&j->proc, j->c.cg, sig);
}

static void job_timer_fired(struct loop_timer *t);

static void set_timer(struct job *j, enum job_timer phase, uint64_t ms)
{
	j->phase = phase;
	j->timer.fn = job_timer_fired;
	if (phase == JT_NONE)
		loop_timer_cancel(&j->timer);
	else
		loop_timer_arm(&j->timer, ms);
}

/* Core lock held: TERM (or sig) now, KILL after the grace if it is still there. */
static void kill_job(struct job *j, int sig)
{
	if (!j->running)
		return;
	if (!j->run->killed) {
		j->run->killed = true;
		j->run->kill_sig = sig;
	}
	signal_tree(j, sig);
	/* A second kill during the grace does not push the SIGKILL back. */
	if (sig != SIGKILL && j->phase != JT_GRACE)
		set_timer(j, JT_GRACE, session_cfg->kill_grace_ms);
}

static void job_timer_fired(struct loop_timer *t)
{
	struct job *j = container_of(t, struct job, timer);
	enum job_timer phase = j->phase;

	j->phase = JT_NONE;
	if (phase == JT_TIMEOUT) {
		j->run->timed_out = true;
		kill_job(j, SIGTERM);
	} else if (phase == JT_GRACE) {
		signal_tree(j, SIGKILL);
	}
}

/* Loop thread, core lock held: the start is settled (its pid is known, or it ended). */
static void settle(struct job *j)
{
	pthread_mutex_lock(&start_lock);
	j->settled = true;
	pthread_cond_broadcast(&start_cond);
	pthread_mutex_unlock(&start_lock);
}

static void on_started_job(struct proc *p)
{
	settle(container_of(p, struct job, proc));
}

/* Without the core lock: until the start is settled, at most START_WAIT_MS. */
static void await_settled(struct job *j)
{
	struct timespec deadline;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += START_WAIT_MS / 1000;
	deadline.tv_nsec += (START_WAIT_MS % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&start_lock);
	while (!j->settled &&
	       pthread_cond_timedwait(&start_cond, &start_lock, &deadline) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&start_lock);
}

static void on_exit_job(struct proc *p, int wstatus)
{
	struct job *j = container_of(p, struct job, proc);

	settle(j);

	if (p->start_err)
		run_set_error(j->run, p->start_err, "the launcher could not start it");
	/* Nothing of the tree outlives its top process, killed or not; gone before the drain,
	 * so what they wrote is in the pipes. */
	j->leftovers = cgroup_kill_tree(j->c.cg);
	if (!j->c.cg && (j->run->killed || j->run->timed_out))
		signal_tree(j, SIGKILL);
	job_io_finish(j);
	set_timer(j, JT_NONE, 0);
	loop_timer_cancel(&j->ready_timer);
	j->running = false;
	j->term_sig = WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0;
	j->run->oom_kills = cgroup_mem_oom_kills(j->c.cg, true) - j->run->oom_mark;
	run_end(j->run, run_status_from_wait(wstatus));
	waitq_wake(&j->readyq);
	job_unref(j); /* the running process's reference */
}

/* Core lock held: starts the process with what job_io_open opened. */
static void spawn(struct job *j, int fds[3], int cgfds[4], int ncg, int in_w)
{
	char *argv[] = {session_cfg->shell, "-c", j->run->cmd, NULL};
	struct envlist env;

	session_next_env(j->c.s, &env);
	envlist_unset(&env, "SHLVL");
	j->proc.on_exit = on_exit_job;
	j->proc.on_started = on_started_job;
	pthread_mutex_lock(&start_lock);
	j->settled = false;
	pthread_mutex_unlock(&start_lock);
	/* Begun before it can run: the run hooks see its changes from its first one. */
	run_begin(j->run);
	j->run->oom_mark = cgroup_mem_oom_kills(j->c.cg, true);
	job_io_launch(j, argv, &env, fds, cgfds, ncg, in_w);
	envlist_free(&env);
	j->running = true;
	session_child_ref(&j->c); /* held until the process is gone */
	if (j->timeout_ms)
		set_timer(j, JT_TIMEOUT, j->timeout_ms);
}

int job_idle(struct job *j)
{
	int rc;

	core_lock();
	rc = j->running ? -EBUSY : j->c.removed ? -ENOENT : 0;
	core_unlock();
	return rc;
}

/* Core lock held: the start is refused (err, an errno); its status says why. */
static void refuse(struct job *j, const char *cmd, size_t len, int err, const char *why)
{
	log_warnx("job %s: start refused: %s: %s", j->c.name, why, strerror(err));
	if (j->run)
		run_unref(j->run);
	j->run = run_refused(j->starts + 1, cmd, len, err, why);
	run_journal_as(j->run, "proc", session_id(j->c.s), "proc", j->c.name);
}

int job_set_tty(struct job *j, bool on)
{
	int rc;

	core_lock();
	rc = j->running ? -EBUSY : j->c.removed ? -ENOENT : 0;
	if (rc == 0)
		j->tty = on;
	core_unlock();
	return rc;
}

bool job_tty(struct job *j)
{
	bool on;

	core_lock();
	on = j->tty;
	core_unlock();
	return on;
}

int job_start(struct job *j, const char *cmd, size_t len, unsigned *n)
{
	int fds[3] = {-1, -1, -1}, cgfds[4], ncg, in_w, rc;
	struct run *r;
	char *base;
	int err = 0;

	if (memchr(cmd, '\0', len))
		return -EINVAL;
	core_lock();
	if (j->running || j->c.removed || session_removed_locked(j->c.s)) {
		core_unlock();
		return j->running ? -EBUSY : -ENOENT;
	}
	base = xasprintf("%s/%llu-p%u-%u", session_spool_dir,
			 (unsigned long long)session_serial(j->c.s), j->c.id, j->starts + 1);
	r = run_new(j->starts + 1, cmd, len, base, session_cfg->output_cap, &err);
	free(base);
	if (!r) {
		refuse(j, cmd, len, -err, "cannot create its output spool");
		core_unlock();
		return err;
	}
	if ((rc = job_io_open(j, fds, cgfds, &ncg, &in_w)) < 0) {
		run_unref(r);
		refuse(j, cmd, len, -rc, "cannot open its pipes");
		core_unlock();
		return rc;
	}
	j->starts++;
	run_journal_as(r, "proc", session_id(j->c.s), "proc", j->c.name);
	j->leftovers = 0;
	if (n)
		*n = j->starts;
	if (j->run)
		run_unref(j->run);
	j->run = r;
	spawn(j, fds, cgfds, ncg, in_w);
	core_unlock();
	await_settled(j);
	return 0;
}

struct run *job_run(struct job *j)
{
	struct run *r;

	core_lock();
	r = j->run;
	if (r)
		run_ref(r);
	core_unlock();
	return r;
}

int job_signal(struct job *j, int sig)
{
	int rc = 0;

	core_lock();
	if (!j->running)
		rc = -ESRCH;
	else
		signal_tree(j, sig);
	core_unlock();
	return rc;
}

/* The verbs of a process's ctl, applied with the core lock held. */
static int verb_kill(void *obj, const char *name, const struct verb_value *v)
{
	struct job *j = obj;

	(void)name;
	if (!j->running)
		return -ESRCH;
	kill_job(j, v->sig);
	return 0;
}

static int verb_timeout(void *obj, const char *name, const struct verb_value *v)
{
	struct job *j = obj;

	(void)name;
	j->timeout_ms = v->ms;
	/* During a kill's grace the SIGKILL stays due. */
	if (j->running && j->phase != JT_GRACE)
		set_timer(j, v->ms ? JT_TIMEOUT : JT_NONE, v->ms);
	return 0;
}

static const struct verb verbs[] = {
    {"kill", VA_SIGNAL, verb_kill},
    {"timeout", VA_MS, verb_timeout},
};

int job_ctl(struct job *j, const char *line, size_t len)
{
	int rc;

	if (!j)
		return verb_run(VERBS(verbs), NULL, line, len);
	core_lock();
	rc = verb_run(VERBS(verbs), j, line, len);
	core_unlock();
	return rc;
}

/* Core lock held: kill (sig, then KILL after the grace) every running process of s. */
static void kill_running(struct session *s, int sig)
{
	struct session_child *c;

	TAILQ_FOREACH(c, session_child_list(s, SESSION_CHILD_JOB), link)
	kill_job(job_of(c), sig);
}

/* The object procs/ctl at the root applies its verb to: every session's processes. */
static char every_session;

static void kill_session(struct session *s, int sig)
{
	core_lock();
	if (!session_removed_locked(s))
		kill_running(s, sig);
	core_unlock();
}

static int verb_kill_all(void *obj, const char *name, const struct verb_value *v)
{
	struct session_info *sv = NULL;
	size_t ns;
	int rc = 0;

	(void)name;
	if (obj != &every_session) {
		core_lock();
		if (session_removed_locked(obj))
			rc = -ENOENT;
		else
			kill_running(obj, v->sig);
		core_unlock();
		return rc;
	}
	ns = session_list(&sv);
	for (size_t i = 0; i < ns; i++) {
		struct session *cur = session_find_serial(sv[i].serial);

		if (cur) {
			kill_session(cur, v->sig);
			session_unref(cur);
		}
	}
	free(sv);
	return 0;
}

static const struct verb jobs_verbs[] = {
    {"kill", VA_SIGNAL, verb_kill_all},
};

int jobs_ctl(struct session *s, const char *line, size_t len, bool apply)
{
	void *obj = !apply ? NULL : s ? (void *)s : &every_session;

	return verb_run(VERBS(jobs_verbs), obj, line, len);
}

static const char *state_of(const struct job *j, int *sig)
{
	const struct run *r = j->run;

	*sig = 0;
	if (!r)
		return "idle";
	if (j->running && !j->proc.pid)
		return "starting"; /* the launcher has not said its pid yet */
	if (j->running || r->ending)
		return "running"; /* or ended, not yet published (run_end) */
	/* A shell wrapper reports its killed child as 128+N: a kill we sent counts too. */
	if (j->term_sig || (r->killed && r->status > 128)) {
		*sig = j->term_sig ? j->term_sig : r->status - 128;
		return "killed";
	}
	return r->status == 0 ? "completed" : "failed";
}

char *job_status(struct job *j)
{
	char started[32] = "-", ended[32] = "-", exit_text[16] = "-", *text, *error;
	const char *state;
	int sig;

	core_lock();
	state = state_of(j, &sig);
	error = j->run ? run_error_text(j->run) : NULL;
	if (j->run && j->run->state != RUN_QUEUED)
		snprintf(started, sizeof(started), "%lld.%03ld", (long long)j->run->started.tv_sec,
			 j->run->started.tv_nsec / 1000000);
	if (j->run && j->run->state == RUN_DONE) {
		snprintf(ended, sizeof(ended), "%lld.%03ld", (long long)j->run->ended.tv_sec,
			 j->run->ended.tv_nsec / 1000000);
		snprintf(exit_text, sizeof(exit_text), "%d", j->run->status);
	}
	text = xasprintf(
	    "name %s\nstate %s\npid %d\nstarted %s\nended %s\nexit %s\nsignal %d\n"
	    "timed_out %s\nstarts %u\ntimeout %llu\noom_killed %s\nleftovers %d\ntty %s\n%s",
	    j->c.name, state, j->run ? (int)j->proc.pid : 0, started, ended, exit_text, sig,
	    j->run && j->run->timed_out ? "yes" : "no", j->starts,
	    (unsigned long long)j->timeout_ms, j->run && j->run->oom_kills ? "yes" : "no",
	    j->leftovers, j->tty ? "yes" : "no",
	    /* only when it was: the spool budget emptied its output */
	    j->run && j->run->budget.dropped ? "output_dropped yes\n" : "");
	core_unlock();
	return esc_status_error(text, error); /* the line only when something went wrong */
}

/* Core lock held. */
static size_t ports_locked(struct job *j, unsigned **ports)
{
	pid_t *pids;
	size_t n, np;

	*ports = NULL;
	if (!j->running)
		return 0;
	np = cgroup_pids(j->c.cg, &pids);
	n = ports_listening(pids, np, ports);
	free(pids);
	return n;
}

char *job_ports(struct job *j)
{
	unsigned *ports;
	char *text = xstrdup(""), *next;
	size_t n;

	core_lock();
	n = ports_locked(j, &ports);
	core_unlock();
	for (size_t i = 0; i < n; i++) {
		next = xasprintf("%s%u\n", text, ports[i]);
		free(text);
		text = next;
	}
	free(ports);
	return text;
}

static void ready_poll(struct loop_timer *t)
{
	struct job *j = container_of(t, struct job, ready_timer);
	unsigned *ports;
	size_t n = ports_locked(j, &ports);

	free(ports);
	if (n > 0 || !j->running)
		waitq_wake(&j->readyq);
	else if (!TAILQ_EMPTY(&j->readyq.head))
		loop_timer_arm(&j->ready_timer, READY_POLL_MS);
}

int job_ready(struct job *j, unsigned *port, struct waiter *w)
{
	unsigned *ports;
	size_t n;
	int rc = 0;

	core_lock();
	n = ports_locked(j, &ports);
	if (n > 0) {
		*port = ports[0];
	} else if ((!j->running && j->run) || j->c.removed) {
		*port = 0;
	} else {
		rc = -EAGAIN;
		if (w) {
			waitq_add(&j->readyq, w);
			j->ready_timer.fn = ready_poll;
			if (!j->ready_timer.armed)
				loop_timer_arm(&j->ready_timer, READY_POLL_MS);
		}
	}
	core_unlock();
	free(ports);
	return rc;
}

static void forget(struct session_child *c)
{
	struct job *j = job_of(c);

	j->c.removed = true;
	session_child_unlink(&j->c);
	kill_job(j, SIGKILL);
	feed_wake(&j->in);
	/* Its ready readers learn it is gone now; a never started one has no exit to stop the poll,
	 * and the last reference may go before the timer would fire. */
	loop_timer_cancel(&j->ready_timer);
	waitq_wake(&j->readyq);
	job_unref(j);
}

int job_remove(struct session *s, const char *name)
{
	return session_child_remove(s, SESSION_CHILD_JOB, name);
}
