/* The children of a session (background processes and terminals, see sesschild.h): finding them
 * by name or id, adding, references, removal. */
#include "sesschild.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cgroup.h"
#include "loop.h"
#include "session_priv.h"

struct sesschild *sesschild_find_locked(struct sesschild_list *list, const char *name, unsigned id)
{
	struct sesschild *c;

	TAILQ_FOREACH(c, list, link)
	if (name ? !strcmp(c->name, name) : c->id == id)
		return c;
	return NULL;
}

struct sesschild *sesschild_get(struct sesschild_list *list, const char *name, unsigned id)
{
	struct sesschild *c;

	core_lock();
	c = sesschild_find_locked(list, name, id);
	if (c)
		sesschild_ref(c);
	core_unlock();
	return c;
}

int sesschild_free_name(struct session *s, struct sesschild_list *list, const char *name)
{
	if (s->removed)
		return -ENOENT;
	return sesschild_find_locked(list, name, 0) ? -EEXIST : 0;
}

void sesschild_add(struct sesschild *c, struct session *s, struct sesschild_list *list, unsigned id,
		   const char *name, char cgprefix)
{
	char cgname[32];

	c->refs = 1; /* the session's list */
	c->id = id;
	snprintf(c->name, sizeof(c->name), "%s", name);
	session_ref(s);
	c->s = s;
	snprintf(cgname, sizeof(cgname), "%c%u", cgprefix, id);
	c->cg = cgroup_create(s->cg, cgname);
	TAILQ_INSERT_TAIL(list, c, link);
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

int sesschild_remove(struct sesschild_list *list, const char *name,
		     void (*forget)(struct sesschild *c))
{
	struct sesschild *c;

	core_lock();
	c = sesschild_find_locked(list, name, 0);
	if (c)
		forget(c);
	core_unlock();
	return c ? 0 : -ENOENT;
}

void sesschild_teardown(struct sesschild_list *list, void (*forget)(struct sesschild *c))
{
	struct sesschild *c;

	while ((c = TAILQ_FIRST(list)))
		forget(c);
}
