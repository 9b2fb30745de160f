/* Tickets: one-shot results with waiters (see ticket.h). */
#include "ticket.h"

#include <errno.h>
#include <stdlib.h>

#include "loop.h"
#include "xmalloc.h"

struct ticket *ticket_new(void)
{
	struct ticket *t = xcalloc(1, sizeof(*t));

	t->refs = 1;
	waitq_init(&t->q);
	return t;
}

void ticket_ref(struct ticket *t)
{
	__atomic_add_fetch(&t->refs, 1, __ATOMIC_RELAXED);
}

void ticket_unref(struct ticket *t)
{
	if (__atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(t);
}

void ticket_done(struct ticket *t, int result)
{
	if (t->done)
		return;
	t->done = true;
	t->result = result;
	waitq_wake(&t->q);
}

bool ticket_abandoned(const struct ticket *t)
{
	return __atomic_load_n(&t->refs, __ATOMIC_ACQUIRE) == 1;
}

int ticket_wait(struct ticket *t, int *result, struct waiter *w)
{
	int rc = 0;

	core_lock();
	if (t->done) {
		*result = t->result;
	} else {
		rc = -EAGAIN;
		if (w)
			waitq_add(&t->q, w);
	}
	core_unlock();
	return rc;
}
