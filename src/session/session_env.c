/* A session's env and cwd (see session.h): what the next command starts with, counting the edits
 * still queued, and the env edits and cds queued for the shell. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "session_priv.h"
#include "xmalloc.h"

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
