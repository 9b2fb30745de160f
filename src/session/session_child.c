/* The children of a session (background processes and terminals, see session_child.h): finding them
 * by name or id, adding, references, removal. */
#include "session_child.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cgroup.h"
#include "loop.h"
#include "session_priv.h"

struct session_child_list *session_child_list(struct session *s, enum session_child_kind k)
{
	return &s->children[k];
}

struct session_child *session_child_find_locked(struct session *s, enum session_child_kind k,
						const char *name, unsigned id)
{
	struct session_child *c;

	TAILQ_FOREACH(c, &s->children[k], link)
	if (name ? !strcmp(c->name, name) : c->id == id)
		return c;
	return NULL;
}

struct session_child *session_child_get(struct session *s, enum session_child_kind k,
					const char *name, unsigned id)
{
	struct session_child *c;

	core_lock();
	c = session_child_find_locked(s, k, name, id);
	if (c)
		session_child_ref(c);
	core_unlock();
	return c;
}

int session_child_free_name(struct session *s, enum session_child_kind k, const char *name)
{
	if (s->removed)
		return -ENOENT;
	return session_child_find_locked(s, k, name, 0) ? -EEXIST : 0;
}

void session_child_add(struct session_child *c, struct session *s,
		       const struct session_child_ops *ops, const char *name)
{
	char cgname[32];

	c->refs = 1; /* the session's list */
	c->id = ++s->next_child_id[ops->kind];
	c->ops = ops;
	snprintf(c->name, sizeof(c->name), "%s", name);
	session_ref(s);
	c->s = s;
	snprintf(cgname, sizeof(cgname), "%c%u", ops->cgprefix, c->id);
	c->cg = cgroup_create(s->cg, cgname);
	TAILQ_INSERT_TAIL(&s->children[ops->kind], c, link);
}

void session_child_unlink(struct session_child *c)
{
	TAILQ_REMOVE(&c->s->children[c->ops->kind], c, link);
}

void session_child_ref(struct session_child *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
}

bool session_child_unref(struct session_child *c)
{
	return __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0;
}

void session_child_release(struct session_child *c)
{
	cgroup_destroy(c->cg);
	session_unref(c->s);
}

int session_child_remove(struct session *s, enum session_child_kind k, const char *name)
{
	struct session_child *c;

	core_lock();
	c = session_child_find_locked(s, k, name, 0);
	if (c)
		c->ops->forget(c);
	core_unlock();
	return c ? 0 : -ENOENT;
}

void session_child_teardown(struct session *s)
{
	struct session_child *c;

	for (int k = 0; k < SESSION_CHILD_KINDS; k++)
		while ((c = TAILQ_FIRST(&s->children[k])))
			c->ops->forget(c);
}
