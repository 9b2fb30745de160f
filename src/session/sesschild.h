/* What a background process (job/) and a terminal (term/) share as children of a session: a
 * name and an id in the session's list of their kind, a reference to the session, a cgroup of
 * their own, and their own references. Embedded in struct job and struct term as their member c.
 * Each child carries the ops of its kind, so the session ends its children (removal, teardown)
 * without knowing what they are. */
#ifndef SBX_SESSCHILD_H
#define SBX_SESSCHILD_H

#include <stdbool.h>
#include <sys/queue.h>

#include "session.h"

struct cgroup;
struct sesschild;

enum sesschild_kind { SESSCHILD_JOB, SESSCHILD_TERM, SESSCHILD_KINDS };

struct sesschild_ops {
	enum sesschild_kind kind;
	char cgprefix; /* its cgroup is named cgprefix and id, under the session's */
	/* Core lock held: kill it, take it out of the list (sesschild_unlink) and drop the list's
	 * reference. */
	void (*forget)(struct sesschild *c);
};

struct sesschild {
	int refs;
	unsigned id;
	char name[SESSION_ID_MAX + 1];
	struct session *s; /* referenced */
	const struct sesschild_ops *ops;
	bool removed;
	struct cgroup *cg;
	TAILQ_ENTRY(sesschild) link;
};

TAILQ_HEAD(sesschild_list, sesschild);

/* Core lock held: s's children of kind k, oldest first. */
struct sesschild_list *sesschild_list(struct session *s, enum sesschild_kind k);
/* Core lock held: by name, or by id if name is NULL; not referenced. */
struct sesschild *sesschild_find_locked(struct session *s, enum sesschild_kind k, const char *name,
					unsigned id);
/* As sesschild_find_locked, taking the core lock, and referenced. */
struct sesschild *sesschild_get(struct session *s, enum sesschild_kind k, const char *name,
				unsigned id);
/* Core lock held: whether name may be added to s's children of kind k: 0, -ENOENT (s is
 * removed) or -EEXIST. */
int sesschild_free_name(struct session *s, enum sesschild_kind k, const char *name);
/* Core lock held: fills c (one reference, the list's, and the next id of its kind), references
 * s, makes its cgroup and adds it to s's list of its kind. */
void sesschild_add(struct sesschild *c, struct session *s, const struct sesschild_ops *ops,
		   const char *name);
/* Core lock held: takes c out of its session's list (its forget does). */
void sesschild_unlink(struct sesschild *c);
void sesschild_ref(struct sesschild *c);
/* Drops a reference: true when it was the last, and the owner then frees its part and calls
 * sesschild_release. */
bool sesschild_unref(struct sesschild *c);
/* Its cgroup and its session's reference. */
void sesschild_release(struct sesschild *c);
/* Takes the core lock: forgets the child of kind k named name; 0 or -ENOENT. */
int sesschild_remove(struct session *s, enum sesschild_kind k, const char *name);
/* Core lock held: forgets every child of s, of every kind (session removal). */
void sesschild_teardown(struct session *s);

#endif
