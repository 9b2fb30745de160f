/* The children of a session (background processes and terminals, see sesschild.h): finding them
 * by name or id, adding, references, removal. */
#include "sesschild.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cgroup.h"
#include "loop.h"
#include "session_priv.h"

struct sesschild_list *sesschild_list(struct session *s, enum sesschild_kind k)
{
	return &s->children[k];
}

struct sesschild *sesschild_find_locked(struct session *s, enum sesschild_kind k, const char *name,
					unsigned id)
{
	struct sesschild *c;

	TAILQ_FOREACH(c, &s->children[k], link)
	if (name ? !strcmp(c->name, name) : c->id == id)
		return c;
	return NULL;
}

struct sesschild *sesschild_get(struct session *s, enum sesschild_kind k, const char *name,
				unsigned id)
{
	struct sesschild *c;

	core_lock();
	c = sesschild_find_locked(s, k, name, id);
	if (c)
		sesschild_ref(c);
	core_unlock();
	return c;
}

int sesschild_free_name(struct session *s, enum sesschild_kind k, const char *name)
{
	if (s->removed)
		return -ENOENT;
	return sesschild_find_locked(s, k, name, 0) ? -EEXIST : 0;
}

void sesschild_add(struct sesschild *c, struct session *s, const struct sesschild_ops *ops,
		   const char *name)
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

void sesschild_unlink(struct sesschild *c)
{
	TAILQ_REMOVE(&c->s->children[c->ops->kind], c, link);
}

void sesschild_ref(struct sesschild *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
}

bool sesschild_unref(struct sesschild *c)
{
	return __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0;
}

void sesschild_release(struct sesschild *c)
{
	cgroup_destroy(c->cg);
	session_unref(c->s);
}

int sesschild_remove(struct session *s, enum sesschild_kind k, const char *name)
{
	struct sesschild *c;

	core_lock();
	c = sesschild_find_locked(s, k, name, 0);
	if (c)
		c->ops->forget(c);
	core_unlock();
	return c ? 0 : -ENOENT;
}

void sesschild_teardown(struct session *s)
{
	struct sesschild *c;

	for (int k = 0; k < SESSCHILD_KINDS; k++)
		while ((c = TAILQ_FIRST(&s->children[k])))
			c->ops->forget(c);
}
