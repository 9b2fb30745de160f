/* Wait queues and the ready list of woken waiters (see waiter.h for the protocol). */
#include "waiter.h"

#include <stddef.h>

#include "loop.h"

static struct waitq ready = {TAILQ_HEAD_INITIALIZER(ready.head)};

void waitq_init(struct waitq *q)
{
	TAILQ_INIT(&q->head);
}

void waitq_add(struct waitq *q, struct waiter *w)
{
	w->q = q;
	TAILQ_INSERT_TAIL(&q->head, w, link);
}

void waitq_wake(struct waitq *q)
{
	struct waiter *w;

	if (TAILQ_EMPTY(&q->head))
		return;
	while ((w = TAILQ_FIRST(&q->head))) {
		TAILQ_REMOVE(&q->head, w, link);
		waitq_add(&ready, w);
	}
	loop_poke();
}

bool waiter_cancel_locked(struct waiter *w)
{
	if (!w->q)
		return false;
	TAILQ_REMOVE(&w->q->head, w, link);
	w->q = NULL;
	return true;
}

bool waiter_cancel(struct waiter *w)
{
	bool queued;

	core_lock();
	queued = waiter_cancel_locked(w);
	core_unlock();
	return queued;
}

void waiters_run_ready(void)
{
	struct waiter *w;

	for (;;) {
		core_lock();
		w = TAILQ_FIRST(&ready.head);
		if (w) {
			TAILQ_REMOVE(&ready.head, w, link);
			w->q = NULL;
		}
		core_unlock();
		if (!w)
			return;
		w->wake(w);
	}
}
