/* Sessions (see session.h): the table of sessions and their lifetime (cgroup, first shell, removal,
 * shutdown). What they take is session_run.c's (commands, checkouts, history), session_env.c's
 * (env, cwd) and session_ctl.c's (timeout, ctl, status); running the queue is exec.c's, stdin is
 * session_stdin.c's. */
#include "session.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup_mem.h"
#include "changes.h"
#include "journal.h"
#include "log.h"
#include "names.h"
#include "session_priv.h"
#include "net.h"
#include "rootenv.h"
#include "xmalloc.h"

const struct config *session_cfg;
const struct identity *session_owner;
char *session_spool_dir;
static TAILQ_HEAD(, session) sessions = TAILQ_HEAD_INITIALIZER(sessions);
static uint64_t next_serial = 1;
static char *start_dir; /* the workspace as commands see it */

bool session_id_valid(const char *id, size_t len)
{
	if (len == 0 || len > SESSION_ID_MAX)
		return false;
	if ((len == 1 && id[0] == '.') || (len == 2 && id[0] == '.' && id[1] == '.'))
		return false;
	return name_chars_valid(id, len);
}

const char *session_id(const struct session *s)
{
	return s->id;
}

uint64_t session_serial(const struct session *s)
{
	return s->serial;
}

bool session_removed_locked(const struct session *s)
{
	return s->removed;
}

const char *session_cwd_locked(const struct session *s)
{
	return s->cwd;
}

struct timespec session_ctime(const struct session *s)
{
	return s->ctime;
}

void session_ref(struct session *s)
{
	__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
}

void session_unref(struct session *s)
{
	struct run *r;

	if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	while ((r = TAILQ_FIRST(&s->runs))) {
		TAILQ_REMOVE(&s->runs, r, hist);
		run_unref(r);
	}
	if (s->checkout)
		run_unref(s->checkout);
	cgroup_destroy(s->cg);
	feed_free(&s->in.feed);
	net_client_free(s->net);
	envlist_free(&s->env);
	envlist_free(&s->own_env);
	free(s->cwd);
	free(s);
}

struct cgroup *session_cgroup(const struct session *s)
{
	return s->cg;
}

const struct net_client *session_net(const struct session *s)
{
	return s->net;
}

const char *session_id_by_serial_locked(uint64_t serial)
{
	struct session *s;

	TAILQ_FOREACH(s, &sessions, link)
	if (s->serial == serial)
		return s->id;
	return NULL;
}

static struct session *find_locked(const char *id)
{
	struct session *s;

	TAILQ_FOREACH(s, &sessions, link)
	if (strcmp(s->id, id) == 0)
		return s;
	return NULL;
}

/* Core lock held: a new session with its shell started, in the table; NULL and *err if the
 * shell cannot be started (its pipes, descriptors, memory), and then nothing of it remains. */
static struct session *create_locked(const char *id, struct ticket **ready, int *err)
{
	struct session *s;
	char cgname[32];

	if (next_serial > SESSION_SERIAL_MAX) {
		*err = -ENOSPC;
		return NULL;
	}
	s = xcalloc(1, sizeof(*s));
	snprintf(s->id, sizeof(s->id), "%s", id);
	s->serial = next_serial++;
	s->refs = 1; /* the table's */
	clock_gettime(CLOCK_REALTIME, &s->ctime);
	TAILQ_INIT(&s->queue);
	TAILQ_INIT(&s->runs);
	for (int k = 0; k < SESSION_CHILD_KINDS; k++)
		TAILQ_INIT(&s->children[k]);
	feed_init(&s->in.feed);
	s->in.pending_w = -1;
	s->timeout_ms = session_cfg->timeout_ms;
	envlist_init(&s->env);
	for (size_t i = 0; i < session_cfg->n_base_env; i++)
		envlist_put(&s->env, session_cfg->base_env[i]);
	s->net = net_client_open(s->id);
	net_client_env(s->net, &s->env);
	rootenv_seed(&s->env);
	envlist_init(&s->own_env);
	s->cwd = xstrdup(start_dir);
	/* What bash adds at start, so env reads the same before and after its first report. */
	envlist_set(&s->env, "PWD", s->cwd);
	envlist_set(&s->env, "SHLVL", "1");
	snprintf(cgname, sizeof(cgname), "s%llu", (unsigned long long)s->serial);
	s->cg = cgroup_create(NULL, cgname);
	cgroup_mem_limit_session(s->cg);
	cgroup_limit_session(s->cg, config_session_pids(session_cfg));
	if ((*err = exec_start_shell(s)) < 0) {
		log_warnx("session %s not created: %s", id, strerror(-*err));
		s->removed = true;
		net_client_close(s->net);
		session_unref(s);
		return NULL;
	}
	TAILQ_INSERT_TAIL(&sessions, s, link);
	journal_tap_open(s->id);
	journal_event("session.new", s->id, NULL, NULL);
	s->oom_watch = cgroup_mem_watch(s->cg, exec_oom, s);
	if (ready) {
		s->ready = *ready = ticket_new();
		ticket_ref(*ready);
	}
	return s;
}

void session_start_failed(struct session *s, int err)
{
	struct ticket *ready = s->ready;

	s->ready = NULL;
	if (!s->removed) {
		log_warnx("session %s removed: its shell did not come up", s->id);
		TAILQ_REMOVE(&sessions, s, link);
		journal_event("session.remove", s->id, "reason", "its shell did not come up");
		journal_tap_close(s->id);
		exec_teardown(s);
		session_unref(s); /* the table's; the caller still holds the shell's */
	} else {
		err = -ENOENT; /* removed by an rmdir meanwhile */
	}
	ticket_done(ready, err);
	ticket_unref(ready);
}

int session_create(const char *id, struct session **out, struct ticket **ready)
{
	struct session *s;
	int err = 0;

	if (!session_id_valid(id, strlen(id)))
		return -EINVAL;
	core_lock();
	if (find_locked(id)) {
		core_unlock();
		return -EEXIST;
	}
	s = create_locked(id, ready, &err);
	if (s && out) {
		session_ref(s);
		*out = s;
	}
	core_unlock();
	return err;
}

int session_clone(char *id, struct ticket **ready)
{
	static unsigned counter;
	int err = 0;

	core_lock();
	do
		snprintf(id, SESSION_ID_MAX + 1, "s%u", ++counter);
	while (find_locked(id));
	create_locked(id, ready, &err);
	core_unlock();
	return err;
}

int session_remove(const char *id, struct ticket **gone)
{
	struct session *s;

	core_lock();
	s = find_locked(id);
	if (!s || strcmp(id, SESSION_DEFAULT) == 0) {
		core_unlock();
		return s ? -EBUSY : -ENOENT;
	}
	TAILQ_REMOVE(&sessions, s, link);
	journal_event("session.remove", s->id, NULL, NULL);
	journal_tap_close(s->id);
	*gone = ticket_new();
	if (s->sh) {
		ticket_ref(*gone);
		s->gone = *gone;
	} else {
		ticket_done(*gone, 0);
	}
	exec_teardown(s);
	core_unlock();
	session_unref(s);
	changes_note();
	return 0;
}

struct session *session_find(const char *id)
{
	struct session *s;

	core_lock();
	s = find_locked(id);
	if (s)
		session_ref(s);
	core_unlock();
	return s;
}

struct session *session_find_serial(uint64_t serial)
{
	struct session *s;

	core_lock();
	TAILQ_FOREACH(s, &sessions, link)
	if (s->serial == serial)
		break;
	if (s)
		session_ref(s);
	core_unlock();
	return s;
}

size_t session_list(struct session_info **v)
{
	struct session *s;
	size_t n = 0;

	core_lock();
	TAILQ_FOREACH(s, &sessions, link)
	n++;
	*v = xcalloc(n, sizeof(**v));
	n = 0;
	TAILQ_FOREACH(s, &sessions, link)
	{
		memcpy((*v)[n].id, s->id, sizeof(s->id));
		(*v)[n++].serial = s->serial;
	}
	core_unlock();
	return n;
}

void sessions_init(const struct config *c, const char *dir, const char *workspace,
		   const struct identity *id)
{
	session_cfg = c;
	session_owner = id;
	session_spool_dir = xstrdup(dir);
	start_dir = xstrdup(workspace);
}

void sessions_shutdown(void)
{
	struct session *s;

	core_lock();
	while ((s = TAILQ_FIRST(&sessions))) {
		TAILQ_REMOVE(&sessions, s, link);
		exec_teardown(s);
		/* Now, not when the last open file lets go: the sandbox's group goes next. */
		cgroup_destroy(s->cg);
		s->cg = NULL;
		if (s->current) {
			struct op *op = s->current;

			s->current = NULL;
			exec_op_fail(op, 128 + SIGKILL, 0, NULL);
		}
		session_stdin_end(s);
		if (s->ready) {
			ticket_done(s->ready, -ENOENT);
			ticket_unref(s->ready);
			s->ready = NULL;
		}
		if (s->sh) {
			shell_abandon(s->sh);
			s->sh = NULL;
			session_unref(s); /* the shell's reference */
		}
		session_unref(s);
	}
	core_unlock();
	free(session_spool_dir);
	free(start_dir);
	session_spool_dir = start_dir = NULL;
	rootenv_free();
}
