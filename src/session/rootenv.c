/* The sandbox-wide environment (see rootenv.h): the root set, and its edits passed on to each
 * session as an env edit queued like its own, filtered by the names the session owns. */
#include "rootenv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "changes.h"
#include "loop.h"
#include "session_priv.h"
#include "xmalloc.h"

static struct envlist root_env; /* guarded by the core lock */

char *rootenv_read(size_t *len)
{
	char *text;

	core_lock();
	text = envlist_format(&root_env, len);
	core_unlock();
	return text;
}

void rootenv_seed(struct envlist *env)
{
	for (size_t i = 0; i < root_env.n; i++) {
		const char *eq = strchr(root_env.v[i], '=');
		char *name = xstrndup(root_env.v[i], (size_t)(eq - root_env.v[i]));

		envlist_set(env, name, eq + 1);
		free(name);
	}
}

/* Core lock held: the edits of ed that s has not overridden, queued for its next command. */
static void pass_on(struct session *s, const struct envedits *ed)
{
	struct envedits mine = {0};
	struct op *op;

	if (s->removed)
		return;
	mine.e = xcalloc(ed->n, sizeof(*mine.e));
	for (size_t i = 0; i < ed->n; i++) {
		if (envlist_get(&s->own_env, ed->e[i].name))
			continue;
		mine.e[mine.n].name = xstrdup(ed->e[i].name);
		mine.e[mine.n++].value = ed->e[i].value ? xstrdup(ed->e[i].value) : NULL;
	}
	if (mine.n == 0) {
		envedits_free(&mine);
		return;
	}
	op = xcalloc(1, sizeof(*op));
	op->kind = OP_ENV;
	op->edits = mine;
	exec_enqueue(s, op);
}

/* Core lock held: the bounds hold for the env a new session starts with (the configured one,
 * then the root set). The sessions' own envs are theirs to keep in bounds. */
static int check_locked(const struct envedits *ed)
{
	struct envlist fresh;
	int rc;

	envlist_init(&fresh);
	for (size_t i = 0; i < session_cfg->n_base_env; i++)
		envlist_put(&fresh, session_cfg->base_env[i]);
	rootenv_seed(&fresh);
	rc = envlist_check_edits(&fresh, ed, session_cfg->env_value_max, session_cfg->env_max);
	envlist_free(&fresh);
	return rc;
}

int rootenv_check(const struct envedits *ed)
{
	int rc;

	core_lock();
	rc = check_locked(ed);
	core_unlock();
	return rc;
}

int rootenv_write(const char *buf, size_t len)
{
	struct session_info *sv = NULL;
	struct envedits ed;
	size_t ns;
	int rc;

	if (envedits_parse(buf, len, &ed) < 0)
		return -EINVAL;
	if (ed.n == 0)
		return 0;
	/* The root set first: a session made from now on starts with it, and every session made
	 * before is in the list below. */
	core_lock();
	rc = check_locked(&ed);
	if (rc == 0) {
		envlist_apply(&root_env, &ed);
		env_journal(NULL, &ed);
	}
	core_unlock();
	if (rc < 0) {
		envedits_free(&ed);
		return rc;
	}
	ns = session_list(&sv);
	for (size_t i = 0; i < ns; i++) {
		struct session *s = session_find_serial(sv[i].serial);

		if (!s)
			continue;
		core_lock();
		pass_on(s, &ed);
		core_unlock();
		session_unref(s);
	}
	free(sv);
	envedits_free(&ed);
	changes_note();
	return 0;
}

void rootenv_free(void)
{
	envlist_free(&root_env);
}
