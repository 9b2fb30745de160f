/* Sessions (see session.h): the table of sessions, their lifetime (cgroup, first shell, removal),
 * and the entry points the control files use. Running the queue is exec.c's, stdin is stdin.c's. */
#include "session.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgmem.h"
#include "escape.h"
#include "gitrun.h"
#include "log.h"
#include "session_priv.h"
#include "rootenv.h"
#include "signame.h"
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
	for (size_t i = 0; i < len; i++) {
		char c = id[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

const char *session_id(const struct session *s)
{
	return s->id;
}

uint64_t session_serial(const struct session *s)
{
	return s->serial;
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
	envlist_free(&s->env);
	envlist_free(&s->own_env);
	free(s->cwd);
	free(s);
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
	struct session *s = xcalloc(1, sizeof(*s));
	char cgname[32];

	snprintf(s->id, sizeof(s->id), "%s", id);
	s->serial = next_serial++;
	s->refs = 1; /* the table's */
	clock_gettime(CLOCK_REALTIME, &s->ctime);
	TAILQ_INIT(&s->queue);
	TAILQ_INIT(&s->runs);
	TAILQ_INIT(&s->jobs);
	TAILQ_INIT(&s->terms);
	feed_init(&s->in.feed);
	s->in.pending_w = -1;
	s->timeout_ms = session_cfg->timeout_ms;
	envlist_init(&s->env);
	for (size_t i = 0; i < session_cfg->n_base_env; i++)
		envlist_put(&s->env, session_cfg->base_env[i]);
	rootenv_seed(&s->env);
	envlist_init(&s->own_env);
	s->cwd = xstrdup(start_dir);
	if (!envlist_get(&s->env, "HOME"))
		envlist_set(&s->env, "HOME", start_dir);
	/* What bash adds at start, so env reads the same before and after its first report. */
	envlist_set(&s->env, "PWD", s->cwd);
	envlist_set(&s->env, "SHLVL", "1");
	snprintf(cgname, sizeof(cgname), "s%llu", (unsigned long long)s->serial);
	s->cg = cgroup_create(NULL, cgname);
	cgmem_limit_session(s->cg);
	cgroup_limit_session(s->cg, config_session_pids(session_cfg));
	if ((*err = exec_start_shell(s)) < 0) {
		log_warnx("session %s not created: %s", id, strerror(-*err));
		s->removed = true;
		session_unref(s);
		return NULL;
	}
	TAILQ_INSERT_TAIL(&sessions, s, link);
	s->oom_watch = cgmem_watch(s->cg, exec_oom, s);
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
	TAILQ_FOREACH(s, &sessions, link) {
		memcpy((*v)[n].id, s->id, sizeof(s->id));
		(*v)[n++].serial = s->serial;
	}
	core_unlock();
	return n;
}

/* Core lock held: the new run joins the history; the oldest beyond the limit leave it. */
static void remember(struct session *s, struct run *r)
{
	run_ref(r);
	TAILQ_INSERT_TAIL(&s->runs, r, hist);
	if (++s->nruns > session_cfg->history) {
		struct run *old = TAILQ_FIRST(&s->runs);

		TAILQ_REMOVE(&s->runs, old, hist);
		s->nruns--;
		run_unref(old);
	}
}

int session_submit(struct session *s, const char *cmd, size_t len, unsigned *n)
{
	struct op *op;
	struct run *r;
	char *base;
	int err = 0;

	if (memchr(cmd, '\0', len))
		return -EINVAL;
	if (len > SESSION_CMD_MAX)
		return -EFBIG;
	core_lock();
	if (s->removed) {
		core_unlock();
		return -ENOENT;
	}
	base = xasprintf("%s/%llu-%u", session_spool_dir, (unsigned long long)s->serial,
			 s->next_n + 1);
	r = run_new(s->next_n + 1, cmd, len, base, session_cfg->output_cap, &err);
	free(base);
	if (!r) {
		/* Refused: the close of cmd fails with err, and the run is kept as done with the
		 * reason, so exit, status and runs/ say what became of it. */
		log_warnx("session %s: command refused: cannot create its output spool: %s", s->id,
			  strerror(-err));
		r = run_refused(++s->next_n, cmd, len, -err, "cannot create its output spool");
		remember(s, r);
		run_unref(r);
		core_unlock();
		return err;
	}
	s->next_n++;
	if (n)
		*n = s->next_n;
	log_debug("session %s: command %u queued", s->id, s->next_n);
	remember(s, r);
	op = xcalloc(1, sizeof(*op));
	op->kind = OP_RUN;
	op->run = r;
	exec_enqueue(s, op);
	core_unlock();
	return 0;
}

struct run *session_latest(struct session *s)
{
	struct run *r;

	core_lock();
	r = TAILQ_LAST(&s->runs, run_list);
	if (r)
		run_ref(r);
	core_unlock();
	return r;
}

/* Parses a request and resolves its directory against the cwd; core lock held. */
static int checkout_prepare(struct session *s, const char *line, size_t len,
			    struct checkout_req *req, char **rel)
{
	char *name, *dir;

	if (s->removed)
		return -ENOENT;
	if (checkout_parse(line, len, req) < 0)
		return -EINVAL;
	name = req->dir ? NULL : checkout_repo_name(req->url);
	if (!req->dir && !name) {
		checkout_req_free(req);
		return -EINVAL;
	}
	dir = req->dir ? xstrdup(req->dir) : xstrdup(name);
	*rel = checkout_resolve(gitrun_workspace(), s->cwd, dir);
	free(dir);
	free(name);
	if (!*rel) {
		checkout_req_free(req);
		return -EINVAL; /* outside the workspace */
	}
	return 0;
}

int session_checkout_check(struct session *s, const char *line, size_t len)
{
	struct checkout_req req;
	char *rel;
	int rc;

	core_lock();
	rc = checkout_prepare(s, line, len, &req, &rel);
	core_unlock();
	if (rc == 0) {
		checkout_req_free(&req);
		free(rel);
	}
	return rc;
}

int session_checkout(struct session *s, const char *line, size_t len, unsigned *n)
{
	struct checkout_req req;
	char *dir, *rel;
	struct op *op;
	struct run *r;
	int err = 0;

	core_lock();
	err = checkout_prepare(s, line, len, &req, &rel);
	if (err < 0) {
		core_unlock();
		return err;
	}
	dir = xasprintf("%s/%llu-checkout-%u", session_spool_dir, (unsigned long long)s->serial,
			++s->next_checkout);
	r = run_new(s->next_checkout, line, len, dir, session_cfg->output_cap, &err);
	free(dir);
	if (!r) {
		core_unlock();
		checkout_req_free(&req);
		free(rel);
		return err;
	}
	op = xcalloc(1, sizeof(*op));
	op->kind = OP_CHECKOUT;
	op->run = r;
	op->req = req;
	op->rel = rel;
	op->shown = rel[0] ? xasprintf("%s/%s", gitrun_workspace(), rel)
			   : xstrdup(gitrun_workspace());
	if (n)
		*n = s->next_checkout;
	if (s->checkout)
		run_unref(s->checkout);
	s->checkout = r;
	run_ref(r);
	if (op->req.depth) {
		/* libgit2 1.5 cannot fetch a shallow history: say so rather than pretend. */
		const char *msg = "error unsupported: depth=N (shallow clone) needs libgit2 1.7; "
				  "this build has 1.5 and clones full history only\n";

		run_begin(r);
		spool_append(&r->out[RUN_STDOUT], msg, strlen(msg));
		run_end(r, 1);
		exec_op_free(op);
	} else {
		exec_enqueue(s, op);
	}
	core_unlock();
	return 0;
}

struct run *session_checkout_run(struct session *s)
{
	struct run *r;

	core_lock();
	r = s->checkout;
	if (r)
		run_ref(r);
	core_unlock();
	return r;
}

struct run *session_run(struct session *s, unsigned n)
{
	struct run *r;

	core_lock();
	TAILQ_FOREACH(r, &s->runs, hist)
		if (r->n == n)
			break;
	if (r)
		run_ref(r);
	core_unlock();
	return r;
}

size_t session_runs(struct session *s, unsigned **ns)
{
	struct run *r;
	size_t n = 0;

	core_lock();
	*ns = xcalloc(s->nruns + 1, sizeof(unsigned));
	TAILQ_FOREACH(r, &s->runs, hist)
		(*ns)[n++] = r->n;
	core_unlock();
	return n;
}

void session_next_env(struct session *s, struct envlist *next)
{
	struct op *op;

	envlist_copy(next, &s->env);
	/* Edits still queued will be in force for the next command. */
	if (s->current && s->current->kind == OP_ENV)
		envlist_apply(next, &s->current->edits);
	TAILQ_FOREACH(op, &s->queue, link)
		if (op->kind == OP_ENV)
			envlist_apply(next, &op->edits);
}

char *session_env(struct session *s, size_t *len)
{
	struct envlist next;
	char *text;

	core_lock();
	session_next_env(s, &next);
	core_unlock();
	text = envlist_format(&next, len);
	envlist_free(&next);
	return text;
}

static int enqueue_unless_removed(struct session *s, struct op *op)
{
	core_lock();
	if (s->removed) {
		core_unlock();
		exec_op_free(op);
		return -ENOENT;
	}
	exec_enqueue(s, op);
	core_unlock();
	return 0;
}

/* Core lock held. */
static int env_check_locked(struct session *s, const struct envedits *ed)
{
	struct envlist next;
	int rc;

	session_next_env(s, &next);
	rc = envlist_check_edits(&next, ed, session_cfg->env_value_max, session_cfg->env_max);
	envlist_free(&next);
	return rc;
}

int session_env_check(struct session *s, const struct envedits *ed)
{
	int rc;

	core_lock();
	rc = env_check_locked(s, ed);
	core_unlock();
	return rc;
}

size_t session_env_value_max(void)
{
	return session_cfg->env_value_max;
}

int session_setenv(struct session *s, const char *buf, size_t len)
{
	struct envedits ed;
	struct op *op;
	int rc;

	if (envedits_parse(buf, len, &ed) < 0)
		return -EINVAL;
	if (ed.n == 0)
		return 0;
	op = xcalloc(1, sizeof(*op));
	op->kind = OP_ENV;
	op->edits = ed;
	core_lock();
	/* Checked at write() already; again here, as commands may have exported since. */
	if ((rc = env_check_locked(s, &ed)) < 0) {
		core_unlock();
		exec_op_free(op);
		return rc;
	}
	for (size_t i = 0; i < ed.n; i++)
		envlist_set(&s->own_env, ed.e[i].name, "");
	core_unlock();
	return enqueue_unless_removed(s, op);
}

char *session_cwd(struct session *s, size_t *len)
{
	char *shown, *text;
	size_t n;

	core_lock();
	shown = esc_encode(s->cwd, strlen(s->cwd), &n); /* one line, whatever the path holds */
	core_unlock();
	text = xasprintf("%s\n", shown);
	free(shown);
	*len = n + 1;
	return text;
}

int session_chdir(struct session *s, const char *path, size_t len, struct ticket **t)
{
	struct op *op;
	char *decoded;
	size_t n;
	int rc;

	if (len > 0 && path[len - 1] == '\n')
		len--;
	if (esc_decode(path, len, &decoded, &n) < 0)
		return -EINVAL;
	if (n == 0) {
		free(decoded);
		return -ENOENT;
	}
	op = xcalloc(1, sizeof(*op));
	op->kind = OP_CHDIR;
	op->path = decoded;
	op->ticket = ticket_new();
	*t = op->ticket;
	ticket_ref(*t);
	rc = enqueue_unless_removed(s, op);
	if (rc < 0)
		ticket_unref(*t);
	return rc;
}

static int parse_ms(const char *text, size_t len, uint64_t *ms)
{
	char buf[32], *end;
	unsigned long long v;

	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
		len--;
	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, text, len);
	buf[len] = '\0';
	if (buf[0] < '0' || buf[0] > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || *end || v > UINT32_MAX)
		return -EINVAL;
	*ms = v;
	return 0;
}

uint64_t session_timeout(struct session *s)
{
	uint64_t ms;

	core_lock();
	ms = s->timeout_ms;
	core_unlock();
	return ms;
}

int session_set_timeout(struct session *s, const char *text, size_t len)
{
	uint64_t ms;

	if (parse_ms(text, len, &ms) < 0)
		return -EINVAL;
	core_lock();
	s->timeout_ms = ms;
	core_unlock();
	return 0;
}

/* Checks a line (s NULL) or, core lock held, applies it: one parse for both, so a line that
 * passed its check at write() applies at close as it was checked. */
static int ctl_verb(struct session *s, char *verb, char *arg)
{
	uint64_t ms;
	int sig = SIGTERM, rc;

	if (!strcmp(verb, "kill") || !strcmp(verb, "killall")) {
		if (arg && signal_parse(arg, &sig) < 0)
			return -EINVAL;
		if (!s)
			return 0;
		rc = exec_kill_all(s, sig);
		/* kill wants something to end; killall is done when nothing is left. */
		if (rc == 0 && !strcmp(verb, "kill"))
			return -ESRCH;
		return rc < 0 ? rc : 0;
	}
	if (!strcmp(verb, "timeout")) {
		if (!arg || parse_ms(arg, strlen(arg), &ms) < 0)
			return -EINVAL;
		if (s) {
			s->next_timeout_ms = ms;
			s->next_timeout_set = true;
		}
		return 0;
	}
	if (!strcmp(verb, "restart") && !arg)
		return s ? exec_restart(s) : 0;
	return -EINVAL;
}

int session_ctl_check(const char *line, size_t len)
{
	struct ctl_line cl;

	if (ctl_line_split(line, len, &cl) < 0)
		return -EINVAL;
	return ctl_verb(NULL, cl.verb, cl.arg);
}

int session_ctl(struct session *s, const char *line, size_t len)
{
	struct ctl_line cl;
	int rc;

	if (ctl_line_split(line, len, &cl) < 0)
		return -EINVAL;
	core_lock();
	rc = s->removed ? -ENOENT : ctl_verb(s, cl.verb, cl.arg);
	core_unlock();
	return rc;
}

char *session_status(struct session *s, size_t *len)
{
	struct run *latest;
	unsigned queued = 0;
	struct op *op;
	char state[32], *head, *tail, *text;

	core_lock();
	TAILQ_FOREACH(op, &s->queue, link)
		queued += op->kind == OP_RUN;
	if (queued)
		snprintf(state, sizeof(state), "queued %u", queued);
	else
		snprintf(state, sizeof(state), "%s",
			 s->current && s->current->kind == OP_RUN ? "running" : "idle");
	head = xasprintf("state %s\nqueued %u\nshell_pid %d\nrestarts %u\ntimeout %llu\n"
			 "oom_kills %llu\n",
			 state, queued, s->sh ? (int)shell_pid(s->sh) : 0, s->restarts,
			 (unsigned long long)s->timeout_ms,
			 (unsigned long long)cgmem_oom_kills(s->cg, true));
	latest = TAILQ_LAST(&s->runs, run_list);
	tail = latest ? run_describe(latest) : xstrdup("");
	core_unlock();
	text = xasprintf("%s%s", head, tail);
	free(head);
	free(tail);
	*len = strlen(text);
	return text;
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
		stdin_end(s);
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
