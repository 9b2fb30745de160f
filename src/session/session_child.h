/* What a background process (job/) and a terminal (term/) share as children of a session: a
 * name and an id in the session's list of their kind, a reference to the session, a cgroup of
 * their own, and their own references. Embedded in struct job and struct term as their member c.
 * Each child carries the ops of its kind, so the session ends its children (removal, teardown)
 * without knowing what they are. */
#ifndef SBX_SESSION_CHILD_H
#define SBX_SESSION_CHILD_H

#include <stdbool.h>
#include <sys/queue.h>

#include "session.h"

struct cgroup;
struct session_child;

enum session_child_kind { SESSION_CHILD_JOB, SESSION_CHILD_TERM, SESSION_CHILD_KINDS };

struct session_child_ops {
	enum session_child_kind kind;
	char cgprefix; /* its cgroup is named cgprefix and id, under the session's */
	/* Core lock held: kill it, take it out of the list (session_child_unlink) and drop the
	 * list's reference. */
	void (*forget)(struct session_child *c);
};

struct session_child {
	int refs;
	unsigned id;
	char name[SESSION_ID_MAX + 1];
	struct session *s; /* referenced */
	const struct session_child_ops *ops;
	bool removed;
	struct cgroup *cg;
	TAILQ_ENTRY(session_child) link;
};

TAILQ_HEAD(session_child_list, session_child);

/* Core lock held: s's children of kind k, oldest first. */
struct session_child_list *session_child_list(struct session *s, enum session_child_kind k);
/* Core lock held: by name, or by id if name is NULL; not referenced. */
struct session_child *session_child_find_locked(struct session *s, enum session_child_kind k,
						const char *name, unsigned id);
/* As session_child_find_locked, taking the core lock, and referenced. */
struct session_child *session_child_get(struct session *s, enum session_child_kind k,
					const char *name, unsigned id);
/* Core lock held: whether name may be added to s's children of kind k: 0, -ENOENT (s is
 * removed) or -EEXIST. */
int session_child_free_name(struct session *s, enum session_child_kind k, const char *name);
/* Core lock held: fills c (one reference, the list's, and the next id of its kind), references
 * s, makes its cgroup and adds it to s's list of its kind. */
void session_child_add(struct session_child *c, struct session *s,
		       const struct session_child_ops *ops, const char *name);
/* Core lock held: takes c out of its session's list (its forget does). */
void session_child_unlink(struct session_child *c);
void session_child_ref(struct session_child *c);
/* Drops a reference: true when it was the last, and the owner then frees its part and calls
 * session_child_release. */
bool session_child_unref(struct session_child *c);
/* Its cgroup and its session's reference. */
void session_child_release(struct session_child *c);
/* Takes the core lock: forgets the child of kind k named name; 0 or -ENOENT. */
int session_child_remove(struct session *s, enum session_child_kind k, const char *name);
/* Core lock held: forgets every child of s, of every kind (session removal). */
void session_child_teardown(struct session *s);

#endif
