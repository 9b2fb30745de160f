/* What a background process (job.c) and a terminal (term.c) share as children of a session:
 * a name and an id in one of the session's lists, a reference to the session, a cgroup of their
 * own, and their own references. Embedded in struct job and struct term as their member c. */
#ifndef SBX_SESSCHILD_H
#define SBX_SESSCHILD_H

#include <stdbool.h>
#include <sys/queue.h>

#include "session.h"

struct cgroup;

struct sesschild {
	int refs;
	unsigned id;
	char name[SESSION_ID_MAX + 1];
	struct session *s; /* referenced */
	bool removed;
	struct cgroup *cg;
	TAILQ_ENTRY(sesschild) link;
};

TAILQ_HEAD(sesschild_list, sesschild);

/* Core lock held: by name, or by id if name is NULL; not referenced. */
struct sesschild *sesschild_find_locked(struct sesschild_list *list, const char *name, unsigned id);
/* As sesschild_find_locked, taking the core lock, and referenced. */
struct sesschild *sesschild_get(struct sesschild_list *list, const char *name, unsigned id);
/* Core lock held: whether name may be added to s's list: 0, -ENOENT (s is removed) or
 * -EEXIST. */
int sesschild_free_name(struct session *s, struct sesschild_list *list, const char *name);
/* Core lock held: fills c (one reference, the list's), references s, makes its cgroup
 * (cgprefix and id, under s's), and adds it to list. */
void sesschild_add(struct sesschild *c, struct session *s, struct sesschild_list *list, unsigned id,
		   const char *name, char cgprefix);
void sesschild_ref(struct sesschild *c);
/* Drops a reference: true when it was the last, and the owner then frees its part and calls
 * sesschild_release. */
bool sesschild_unref(struct sesschild *c);
/* Its cgroup and its session's reference. */
void sesschild_release(struct sesschild *c);
/* Takes the core lock: forget(c) for the child of list named name; 0 or -ENOENT. */
int sesschild_remove(struct sesschild_list *list, const char *name,
		     void (*forget)(struct sesschild *c));
/* Core lock held: forget(c) for every child in list (forget takes it out of list). */
void sesschild_teardown(struct sesschild_list *list, void (*forget)(struct sesschild *c));

#endif
