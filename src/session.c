/* Sessions (see session.h): the table of sessions, each session's work queue, and the glue
 * between its queue and its shell: which op runs next, where output goes, what a report or the
 * shell's death means for the op in flight. A shell that dies is started again, with the last
 * env and cwd it reported, when the next op comes. */
#include "session.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "envlist.h"
#include "log.h"
#include "loop.h"
#include "shell.h"
#include "xmalloc.h"

enum op_kind { OP_RUN, OP_ENV, OP_CHDIR };
enum shell_state { SH_NONE, SH_STARTING, SH_IDLE, SH_BUSY };

struct op {
	enum op_kind kind;
	struct run *run;        /* OP_RUN */
	struct envedits edits;  /* OP_ENV */
	char *path;             /* OP_CHDIR */
	struct ticket *ticket;  /* OP_CHDIR */
	TAILQ_ENTRY(op) link;
};

struct session {
	char id[SESSION_ID_MAX + 1];
	uint64_t serial;
	int refs;
	bool removed;
	struct timespec ctime;
	struct shell *sh;
	enum shell_state st;
	TAILQ_HEAD(, op) queue;
	struct op *current;
	struct run *latest;
	unsigned next_n;
	struct envlist env; /* as the shell last reported it */
	char *cwd;
	struct ticket *gone;
	TAILQ_ENTRY(session) link;
};

static const struct config *cfg;
static char *spool_dir;
static TAILQ_HEAD(, session) sessions = TAILQ_HEAD_INITIALIZER(sessions);
static uint64_t next_serial = 1;

static void pump(struct session *s);

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

bool session_removed(struct session *s)
{
	bool removed;

	core_lock();
	removed = s->removed;
	core_unlock();
	return removed;
}

void session_ref(struct session *s)
{
	__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
}

void session_unref(struct session *s)
{
	if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	if (s->latest)
		run_unref(s->latest);
	envlist_free(&s->env);
	free(s->cwd);
	free(s);
}

static void op_free(struct op *op)
{
	if (op->run)
		run_unref(op->run);
	if (op->ticket)
		ticket_unref(op->ticket);
	envedits_free(&op->edits);
	free(op->path);
	free(op);
}

/* Ends an op that will never run or whose shell died under it. */
static void op_fail(struct op *op, int run_status, const char *why)
{
	if (op->kind == OP_RUN) {
		if (why)
			spool_append(&op->run->out[RUN_STDERR], why, strlen(why));
		run_end(op->run, run_status);
	} else if (op->kind == OP_CHDIR) {
		ticket_done(op->ticket, -EIO);
	}
	op_free(op);
}

/* Shell callbacks: loop thread, core lock held. */

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

static void finish_current(struct session *s, int status)
{
	struct op *op = s->current;

	s->current = NULL;
	if (op->kind == OP_RUN)
		run_end(op->run, status);
	else if (op->kind == OP_CHDIR)
		ticket_done(op->ticket, chdir_result(status));
	op_free(op);
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
	s->st = SH_IDLE;
	pump(s);
}

static void shell_exited(void *arg, int wstatus)
{
	struct session *s = arg;
	bool was_starting = s->st == SH_STARTING;

	s->sh = NULL;
	s->st = SH_NONE;
	if (s->current) {
		finish_current(s, run_status_from_wait(wstatus));
	} else if (was_starting && !TAILQ_EMPTY(&s->queue)) {
		/* A shell that cannot start would be restarted forever: fail the op instead. */
		struct op *op = TAILQ_FIRST(&s->queue);

		TAILQ_REMOVE(&s->queue, op, link);
		log_warnx("session %s: the shell %s exited at start (status %d)", s->id, cfg->shell,
			  run_status_from_wait(wstatus));
		op_fail(op, 127, "sbxfs: the session's shell could not start; see the daemon log\n");
	}
	if (s->gone) {
		ticket_done(s->gone, 0);
		ticket_unref(s->gone);
		s->gone = NULL;
	} else {
		pump(s);
	}
	session_unref(s); /* the shell's reference */
}

static const struct shell_cbs session_shell_cbs = {
	.on_report = shell_report,
	.on_exit = shell_exited,
	.sink = shell_sink,
};

static void start_shell(struct session *s)
{
	int err = 0;

	s->sh = shell_start(cfg, &s->env, s->cwd, &session_shell_cbs, s, &err);
	if (!s->sh) {
		log_warnx("session %s: cannot start a shell: %s", s->id, strerror(-err));
		return;
	}
	session_ref(s);
	s->st = SH_STARTING;
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

static void send_op(struct session *s, struct op *op)
{
	char seq[32];
	char *script = NULL;
	size_t len = 0;

	switch (op->kind) {
	case OP_RUN:
		snprintf(seq, sizeof(seq), "r%u", op->run->n);
		run_begin(op->run);
		shell_send(s->sh, seq, op->run->cmd, op->run->cmdlen);
		return;
	case OP_ENV:
		snprintf(seq, sizeof(seq), "e");
		script = env_script(&op->edits, &len);
		break;
	case OP_CHDIR:
		snprintf(seq, sizeof(seq), "c");
		script = chdir_script(op->path, &len);
		break;
	}
	shell_send(s->sh, seq, script, len);
	free(script);
}

/* Core lock held: starts the next op if the shell is free. */
static void pump(struct session *s)
{
	struct op *op;

	if (s->removed || s->current || s->st == SH_STARTING || TAILQ_EMPTY(&s->queue))
		return;
	if (!s->sh) {
		start_shell(s);
		if (!s->sh)
			while ((op = TAILQ_FIRST(&s->queue))) {
				TAILQ_REMOVE(&s->queue, op, link);
				op_fail(op, 127, "sbxfs: cannot start the session's shell\n");
			}
		return;
	}
	op = TAILQ_FIRST(&s->queue);
	TAILQ_REMOVE(&s->queue, op, link);
	if (op->kind == OP_CHDIR && ticket_abandoned(op->ticket)) {
		op_free(op); /* its writer was interrupted before it ran */
		pump(s);
		return;
	}
	s->current = op;
	s->st = SH_BUSY;
	send_op(s, op);
}

static void enqueue(struct session *s, struct op *op)
{
	TAILQ_INSERT_TAIL(&s->queue, op, link);
	pump(s);
}

static struct session *find_locked(const char *id)
{
	struct session *s;

	TAILQ_FOREACH(s, &sessions, link)
		if (strcmp(s->id, id) == 0)
			return s;
	return NULL;
}

static struct session *create_locked(const char *id)
{
	struct session *s = xcalloc(1, sizeof(*s));

	snprintf(s->id, sizeof(s->id), "%s", id);
	s->serial = next_serial++;
	s->refs = 1; /* the table's */
	clock_gettime(CLOCK_REALTIME, &s->ctime);
	TAILQ_INIT(&s->queue);
	envlist_init(&s->env);
	for (size_t i = 0; i < cfg->n_base_env; i++)
		envlist_put(&s->env, cfg->base_env[i]);
	s->cwd = xstrdup(cfg->workspace);
	/* What bash adds at start, so env reads the same before and after its first report. */
	envlist_set(&s->env, "PWD", s->cwd);
	envlist_set(&s->env, "SHLVL", "1");
	TAILQ_INSERT_TAIL(&sessions, s, link);
	start_shell(s);
	return s;
}

int session_create(const char *id, struct session **out)
{
	struct session *s;

	if (!session_id_valid(id, strlen(id)))
		return -EINVAL;
	core_lock();
	if (find_locked(id)) {
		core_unlock();
		return -EEXIST;
	}
	s = create_locked(id);
	if (out) {
		session_ref(s);
		*out = s;
	}
	core_unlock();
	return 0;
}

int session_clone(char *id)
{
	static unsigned counter;

	core_lock();
	do
		snprintf(id, SESSION_ID_MAX + 1, "s%u", ++counter);
	while (find_locked(id));
	create_locked(id);
	core_unlock();
	return 0;
}

/* Core lock held: drops queued work and kills the shell. */
static void teardown(struct session *s)
{
	struct op *op;

	s->removed = true;
	TAILQ_REMOVE(&sessions, s, link);
	while ((op = TAILQ_FIRST(&s->queue))) {
		TAILQ_REMOVE(&s->queue, op, link);
		op_fail(op, 128 + SIGKILL, NULL);
	}
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
	teardown(s);
	*gone = ticket_new();
	if (s->sh) {
		ticket_ref(*gone);
		s->gone = *gone;
		shell_kill(s->sh);
	} else {
		ticket_done(*gone, 0);
	}
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

int session_submit(struct session *s, const char *cmd, size_t len)
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
	base = xasprintf("%s/%llu-%u", spool_dir, (unsigned long long)s->serial, s->next_n + 1);
	r = run_new(s->next_n + 1, cmd, len, base, &err);
	free(base);
	if (!r) {
		core_unlock();
		log_warnx("session %s: cannot create spool files: %s", s->id, strerror(-err));
		return err;
	}
	s->next_n++;
	if (s->latest)
		run_unref(s->latest);
	s->latest = r;
	run_ref(r);
	op = xcalloc(1, sizeof(*op));
	op->kind = OP_RUN;
	op->run = r;
	enqueue(s, op);
	core_unlock();
	return 0;
}

struct run *session_latest(struct session *s)
{
	struct run *r;

	core_lock();
	r = s->latest;
	if (r)
		run_ref(r);
	core_unlock();
	return r;
}

char *session_env(struct session *s, size_t *len)
{
	struct envlist next;
	struct op *op;
	char *text;

	core_lock();
	envlist_copy(&next, &s->env);
	/* Edits still queued will be in force for the next command. */
	if (s->current && s->current->kind == OP_ENV)
		envlist_apply(&next, &s->current->edits);
	TAILQ_FOREACH(op, &s->queue, link)
		if (op->kind == OP_ENV)
			envlist_apply(&next, &op->edits);
	core_unlock();
	text = envlist_format(&next, len);
	envlist_free(&next);
	return text;
}

int session_setenv(struct session *s, const char *buf, size_t len)
{
	struct envedits ed;
	struct op *op;

	if (envedits_parse(buf, len, &ed) < 0)
		return -EINVAL;
	if (ed.n == 0)
		return 0;
	op = xcalloc(1, sizeof(*op));
	op->kind = OP_ENV;
	op->edits = ed;
	core_lock();
	if (s->removed) {
		core_unlock();
		op_free(op);
		return -ENOENT;
	}
	enqueue(s, op);
	core_unlock();
	return 0;
}

char *session_cwd(struct session *s, size_t *len)
{
	char *text;

	core_lock();
	text = xasprintf("%s\n", s->cwd);
	core_unlock();
	*len = strlen(text);
	return text;
}

int session_chdir(struct session *s, const char *path, size_t len, struct ticket **t)
{
	struct op *op;

	if (len > 0 && path[len - 1] == '\n')
		len--;
	if (memchr(path, '\0', len))
		return -EINVAL;
	if (len == 0)
		return -ENOENT;
	op = xcalloc(1, sizeof(*op));
	op->kind = OP_CHDIR;
	op->path = xstrndup(path, len);
	op->ticket = ticket_new();
	*t = op->ticket;
	ticket_ref(*t);
	core_lock();
	if (s->removed) {
		core_unlock();
		op_free(op);
		ticket_unref(*t);
		return -ENOENT;
	}
	enqueue(s, op);
	core_unlock();
	return 0;
}

void sessions_init(const struct config *c, const char *dir)
{
	cfg = c;
	spool_dir = xstrdup(dir);
}

void sessions_shutdown(void)
{
	struct session *s;

	core_lock();
	while ((s = TAILQ_FIRST(&sessions))) {
		teardown(s);
		if (s->current) {
			struct op *op = s->current;

			s->current = NULL;
			op_fail(op, 128 + SIGKILL, NULL);
		}
		if (s->sh) {
			shell_abandon(s->sh);
			s->sh = NULL;
			session_unref(s); /* the shell's reference */
		}
		session_unref(s);
	}
	core_unlock();
	free(spool_dir);
	spool_dir = NULL;
}
