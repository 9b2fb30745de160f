/* Waiters: how a reader parks on core state without holding a thread. A waiter sits on a wait
 * queue; waking moves it to the loop's ready list, and the loop thread calls wake() outside the
 * core lock. Cancelling and waking are serialized by the core lock, so exactly one happens. */
#ifndef SBX_WAITER_H
#define SBX_WAITER_H

#include <stdbool.h>
#include <sys/queue.h>

struct waitq;

struct waiter {
	TAILQ_ENTRY(waiter) link;
	struct waitq *q; /* the queue it is on, NULL when not queued */
	void (*wake)(struct waiter *w);
};

struct waitq {
	TAILQ_HEAD(, waiter) head;
};

void waitq_init(struct waitq *q);
/* Core lock held. */
void waitq_add(struct waitq *q, struct waiter *w);
/* Core lock held: every waiter on q will be woken by the loop thread. */
void waitq_wake(struct waitq *q);
/* Takes the core lock. True if w was still queued: it will not be woken. */
bool waiter_cancel(struct waiter *w);
/* Core lock held: as waiter_cancel. */
bool waiter_cancel_locked(struct waiter *w);

/* Loop thread, lock not held: wakes every ready waiter. */
void waiters_run_ready(void);

#endif
