/* A session's env and cwd (see session.h): what the next command starts with, counting the edits
 * still queued, and the env edits and cds queued for the shell. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "journal.h"
#include "net.h"
#include "rootenv.h"
#include "session_priv.h"
#include "xmalloc.h"

/* What the shell sets itself, and the daemon's proxy names: not a session's own to save. */
static bool of_the_session(const struct envlist *proxy, const char *name)
{
	static const char *const shell[] = {"PWD", "OLDPWD", "SHLVL", "_"};
	bool own = !envlist_get(proxy, name);

	for (size_t i = 0; own && i < sizeof(shell) / sizeof(shell[0]); i++)
		own = strcmp(name, shell[i]) != 0;
	return own;
}

char *session_env_delta(struct session *s, size_t *len)
{
	struct envlist next, fresh, proxy, sets;
	char *head, *text;
	size_t hlen, off;

	envlist_init(&fresh);
	envlist_init(&proxy);
	core_lock();
	session_next_env(s, &next);
	for (size_t i = 0; i < session_cfg->n_base_env; i++)
		envlist_put(&fresh, session_cfg->base_env[i]);
	rootenv_seed(&fresh);
	net_client_env(s->net, &proxy);
	core_unlock();
	/* next's names are unique: its entries are taken as they are (envlist_set would search
	 * them all for each, and a session can have hundreds of thousands). */
	sets.v = xcalloc(next.n + 1, sizeof(char *));
	sets.n = 0;
	for (size_t i = 0; i < next.n; i++) {
		const char *eq = strchr(next.v[i], '=');
		char *name = xstrndup(next.v[i], (size_t)(eq - next.v[i]));
		const char *was = envlist_get(&fresh, name);

		if (of_the_session(&proxy, name) && (!was || strcmp(was, eq + 1)))
			sets.v[sets.n++] = xstrdup(next.v[i]);
		free(name);
	}
	head = envlist_format(&sets, &hlen);
	text = xmalloc(hlen + 1);
	memcpy(text, head, hlen);
	off = hlen;
	for (size_t i = 0; i < fresh.n; i++) {
		size_t nlen = strcspn(fresh.v[i], "=");
		char *name = xstrndup(fresh.v[i], nlen);

		if (!envlist_get(&next, name) && of_the_session(&proxy, name)) {
			text = xrealloc(text, off + nlen + 3);
			off += (size_t)sprintf(text + off, "-%s\n", name);
		}
		free(name);
	}
	text[off] = '\0';
	*len = off;
	free(head);
	envlist_free(&next);
	envlist_free(&fresh);
	envlist_free(&proxy);
	envlist_free(&sets);
	return text;
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

void env_journal(const char *sid, const struct envedits *ed)
{
	struct jbuf names = {0};
	struct jrec r;

	for (size_t i = 0; i < ed->n; i++)
		jbuf_printf(&names, "%s%s%s", i ? " " : "", ed->e[i].value ? "" : "-",
			    ed->e[i].name);
	jrec_begin(&r, "env.set", sid);
	jrec_strn(&r, "names", names.p ? names.p : "", names.len);
	jrec_commit(&r);
	free(names.p);
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
	env_journal(s->id, &ed);
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
