/* Contexts (see context.h): the table of contexts, their attributes (language, cwd, env,
 * timeout), their status and their cells' history. Running cells is context_run.c's; the driver
 * process context_driver.c's. */
#include "context.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup_mem.h"
#include "cgroup.h"
#include "context_priv.h"
#include "log.h"
#include "net.h"
#include "rootenv.h"
#include "session.h"
#include "verb.h"
#include "xmalloc.h"

const struct config *ctx_cfg;
const struct identity *ctx_owner;
char *ctx_spool_dir;
static char *ctx_workspace;
static TAILQ_HEAD(, context) contexts = TAILQ_HEAD_INITIALIZER(contexts);
static unsigned ncontexts;
static uint32_t next_serial = 1;

static const char *const lang_names[] = {"python", "javascript", "typescript"};

void contexts_set_exe(const char *self_exe)
{
	context_driver_set_dir(self_exe);
}

void contexts_init(const struct config *cfg, const char *spool_dir, const char *workspace,
		   const struct identity *id)
{
	ctx_cfg = cfg;
	ctx_owner = id;
	ctx_spool_dir = xstrdup(spool_dir);
	ctx_workspace = xstrdup(workspace);
}

void context_ref(struct context *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
}

void context_unref(struct context *c)
{
	struct cell *cell;

	if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	while ((cell = TAILQ_FIRST(&c->cells))) {
		TAILQ_REMOVE(&c->cells, cell, link);
		cell_unref(cell);
	}
	envedits_free(&c->env);
	net_client_free(c->net);
	cgroup_destroy(c->cg);
	free(c->cwd);
	free(c);
}

static struct context *find_locked(const char *name, uint32_t serial)
{
	struct context *c;

	TAILQ_FOREACH(c, &contexts, link)
	if (name ? !strcmp(c->name, name) : c->serial == serial)
		return c;
	return NULL;
}

static struct context *find(const char *name, uint32_t serial)
{
	struct context *c;

	core_lock();
	c = find_locked(name, serial);
	if (c)
		context_ref(c);
	core_unlock();
	return c;
}

struct context *context_find(const char *name)
{
	return find(name, 0);
}

struct context *context_find_serial(uint32_t serial)
{
	return find(NULL, serial);
}

/* Core lock held. */
static int create_locked(const char *name)
{
	struct context *c;
	char cgname[32], label[CONTEXT_NAME_MAX + 16];

	if (find_locked(name, 0))
		return -EEXIST;
	if (ncontexts >= CONTEXT_MAX || next_serial > CONTEXT_SERIAL_MAX)
		return -ENOSPC;
	c = xcalloc(1, sizeof(*c));
	c->refs = 1; /* the table's */
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->serial = next_serial++;
	clock_gettime(CLOCK_REALTIME, &c->ctime);
	c->cwd = xstrdup(ctx_workspace);
	c->timeout_ms = ctx_cfg->timeout_ms;
	c->drv.req_w = c->drv.ev_r = c->drv.out_r[0] = c->drv.out_r[1] = -1;
	TAILQ_INIT(&c->cells);
	/* Made and limited as a session's group: its own CPU weight, pids and memory. */
	snprintf(cgname, sizeof(cgname), "x%u", c->serial);
	c->cg = cgroup_create(NULL, cgname);
	cgroup_mem_limit_session(c->cg);
	cgroup_limit_session(c->cg, config_session_pids(ctx_cfg));
	snprintf(label, sizeof(label), "context:%s", name);
	c->net = net_client_open(label);
	TAILQ_INSERT_TAIL(&contexts, c, link);
	ncontexts++;
	return 0;
}

int context_create(const char *name)
{
	int rc;

	if (!session_id_valid(name, strlen(name)) || strlen(name) > CONTEXT_NAME_MAX)
		return -EINVAL;
	core_lock();
	rc = create_locked(name);
	core_unlock();
	return rc;
}

int context_clone(char *name)
{
	int rc;

	core_lock();
	do {
		snprintf(name, CONTEXT_NAME_MAX + 1, "c%u", next_serial);
		rc = create_locked(name);
		/* A name taken by a mkdir: the serial moved on, so try the next. */
		if (rc == -EEXIST)
			next_serial++;
	} while (rc == -EEXIST);
	core_unlock();
	return rc;
}

/* Core lock held: out of the table, its driver killed, its cells ended. */
static void forget(struct context *c)
{
	struct cell *cell;

	c->removed = true;
	net_client_close(c->net);
	TAILQ_REMOVE(&contexts, c, link);
	ncontexts--;
	loop_timer_cancel(&c->timer);
	c->phase = CT_NONE;
	context_driver_kill(c, DK_KILLED);
	TAILQ_FOREACH(cell, &c->cells, link)
	if (cell->st == CELL_QUEUED)
		cell_finish(cell, CELL_KILLED);
	context_unref(c);
}

int context_remove(const char *name)
{
	struct context *c;

	core_lock();
	c = find_locked(name, 0);
	if (c)
		forget(c);
	core_unlock();
	return c ? 0 : -ENOENT;
}

void contexts_shutdown(void)
{
	struct context *c;

	core_lock();
	while ((c = TAILQ_FIRST(&contexts))) {
		context_ref(c);
		forget(c);
		if (c->current) {
			cell_finish(c->current, CELL_KILLED);
			c->current = NULL;
		}
		context_driver_abandon(c);
		/* Now, not when the last open file lets go: the sandbox's group goes next. */
		cgroup_destroy(c->cg);
		c->cg = NULL;
		context_unref(c);
	}
	core_unlock();
	free(ctx_spool_dir);
	free(ctx_workspace);
	ctx_spool_dir = ctx_workspace = NULL;
}

size_t context_list(struct context_info **v)
{
	struct context *c;
	size_t n = 0;

	core_lock();
	*v = xcalloc(ncontexts + 1, sizeof(**v));
	TAILQ_FOREACH(c, &contexts, link)
	{
		snprintf((*v)[n].name, sizeof((*v)[n].name), "%s", c->name);
		(*v)[n++].serial = c->serial;
	}
	core_unlock();
	return n;
}

uint32_t context_serial(const struct context *c)
{
	return c->serial;
}

struct timespec context_ctime(const struct context *c)
{
	return c->ctime;
}

/* Core lock held: the environment its driver starts with. */
void context_env(struct context *c, struct envlist *env)
{
	envlist_init(env);
	for (size_t i = 0; i < ctx_cfg->n_base_env; i++)
		envlist_put(env, ctx_cfg->base_env[i]);
	net_client_env(c->net, env);
	rootenv_seed(env);
	envlist_set(env, "PWD", c->cwd);
	envlist_apply(env, &c->env);
}

char *context_attr(struct context *c, enum context_attr a, size_t *len)
{
	struct envlist env;
	char *text;

	core_lock();
	switch (a) {
	case CA_LANGUAGE:
		text = xasprintf("%s\n", lang_names[c->lang]);
		break;
	case CA_CWD:
		text = xasprintf("%s\n", c->cwd);
		break;
	case CA_ENV:
		context_env(c, &env);
		text = envlist_format(&env, len);
		envlist_free(&env);
		core_unlock();
		return text;
	default:
		text = xasprintf("%llu\n", (unsigned long long)c->timeout_ms);
	}
	core_unlock();
	*len = strlen(text);
	return text;
}

/* One value: its trailing newline dropped; NUL bytes and other lines refused. */
static int one_value(const char *buf, size_t len, char *out, size_t max)
{
	if (len && buf[len - 1] == '\n')
		len--;
	if (len == 0 || len >= max || memchr(buf, '\0', len) || memchr(buf, '\n', len))
		return -EINVAL;
	memcpy(out, buf, len);
	out[len] = '\0';
	return 0;
}

static int parse_language(const char *text, enum ctx_lang *lang)
{
	for (int i = 0; i < 3; i++)
		if (!strcmp(text, lang_names[i])) {
			*lang = (enum ctx_lang)i;
			return 0;
		}
	return -EINVAL;
}

/* Only the last edit of each name counts: the list stays as small as the env it makes. */
static void compact_edits(struct envedits *ed)
{
	size_t kept = 0;

	for (size_t i = 0; i < ed->n; i++) {
		bool later = false;

		for (size_t j = i + 1; j < ed->n && !later; j++)
			later = !strcmp(ed->e[i].name, ed->e[j].name);
		if (later) {
			free(ed->e[i].name);
			free(ed->e[i].value);
		} else {
			ed->e[kept++] = ed->e[i];
		}
	}
	ed->n = kept;
}

/* Core lock held (c given): the env edits checked against the env they would make. */
static int set_env(struct context *c, const char *buf, size_t len, bool apply)
{
	struct envedits ed;
	struct envlist env;
	int rc;

	if ((rc = envedits_parse(buf, len, &ed)) < 0 || !c)
		goto out;
	context_env(c, &env);
	rc = envlist_check_edits(&env, &ed, ctx_cfg->env_value_max, ctx_cfg->env_max);
	envlist_free(&env);
	if (rc == 0 && apply) {
		envedits_append(&c->env, &ed);
		compact_edits(&c->env);
	}
out:
	envedits_free(&ed);
	return rc;
}

/* Core lock held if c is given; c NULL only checks the text; apply false only checks. */
static int set_locked(struct context *c, enum context_attr a, const char *buf, size_t len,
		      bool apply)
{
	char text[PATH_MAX];
	enum ctx_lang lang;
	uint64_t ms;
	char *path;
	int rc;

	if (c && c->removed)
		return -ENOENT;
	if (c && a != CA_TIMEOUT && c->submitted)
		return -EBUSY;
	if (a == CA_ENV)
		return set_env(c, buf, len, apply);
	if ((rc = one_value(buf, len, text, sizeof(text))) < 0)
		return rc;
	if (a == CA_LANGUAGE) {
		if ((rc = parse_language(text, &lang)) < 0)
			return rc;
		if ((rc = context_driver_resolve(lang, &path)) < 0)
			return rc;
		free(path);
		if (c && apply)
			c->lang = lang;
	} else if (a == CA_CWD) {
		if (text[0] != '/')
			return -EINVAL;
		if (c && apply) {
			free(c->cwd);
			c->cwd = xstrdup(text);
		}
	} else {
		if ((rc = verb_parse_ms(text, &ms)) < 0)
			return rc;
		if (c && apply)
			c->timeout_ms = ms;
	}
	return 0;
}

static int set_attr(struct context *c, enum context_attr a, const char *buf, size_t len, bool apply)
{
	int rc;

	if (!c)
		return set_locked(NULL, a, buf, len, false);
	core_lock();
	rc = set_locked(c, a, buf, len, apply);
	core_unlock();
	return rc;
}

int context_set_attr(struct context *c, enum context_attr a, const char *buf, size_t len)
{
	return set_attr(c, a, buf, len, true);
}

int context_check_attr(struct context *c, enum context_attr a, const char *buf, size_t len)
{
	return set_attr(c, a, buf, len, false);
}

static const char *driver_state(const struct context *c)
{
	if (!c->drv.running)
		return "none";
	if (c->drv.kill != DK_NONE)
		return "dying";
	if (c->drv.st == DRV_STARTING)
		return "starting";
	return c->current ? "busy" : "idle";
}

char *context_status(struct context *c, size_t *len)
{
	struct cell *cell, *latest;
	unsigned queued = 0;
	char *text;

	core_lock();
	TAILQ_FOREACH(cell, &c->cells, link)
	queued += cell->st == CELL_QUEUED;
	latest = TAILQ_LAST(&c->cells, cellq);
	text =
	    xasprintf("name %s\nlanguage %s\ndriver %s\npid %d\nstarts %u\ncells %u\n"
		      "queued %u\ncurrent %u\nlatest %u\nlatest_state %s\ntimeout %llu\n"
		      "oom_kills %llu\n",
		      c->name, lang_names[c->lang], driver_state(c),
		      c->drv.running ? (int)c->drv.proc.pid : 0, c->starts, c->next_n, queued,
		      c->current ? c->current->n : 0, latest ? latest->n : 0,
		      latest ? cell_state_name(latest->st) : "-", (unsigned long long)c->timeout_ms,
		      (unsigned long long)cgroup_mem_oom_kills(c->cg, true));
	core_unlock();
	*len = strlen(text);
	return text;
}

struct cell *context_cell(struct context *c, unsigned n)
{
	struct cell *cell, *found = NULL;

	core_lock();
	if (n == 0) {
		found = TAILQ_LAST(&c->cells, cellq);
	} else {
		TAILQ_FOREACH(cell, &c->cells, link)
		if (cell->n == n)
			found = cell;
	}
	if (found)
		cell_ref(found);
	core_unlock();
	return found;
}

size_t context_cells(struct context *c, unsigned **ns)
{
	struct cell *cell;
	size_t n = 0;

	core_lock();
	*ns = xcalloc(c->ncells + 1, sizeof(**ns));
	TAILQ_FOREACH(cell, &c->cells, link)
	(*ns)[n++] = cell->n;
	core_unlock();
	return n;
}

const char *context_name(const struct context *c)
{
	return c->name;
}
