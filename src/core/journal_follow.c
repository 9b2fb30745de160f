/* The journal's followers (journal.h): a poll at the end queues itself, and the next event
 * wakes every queued one on the loop thread. An event costs an atomic load while nobody
 * waits. The flag is raised before the reader looks at the end, and read after the event is
 * in: either the reader sees the event, or the event sees the reader. */
#include <stdlib.h>

#include "journal.h"
#include "loop.h"

static struct waitq followers;
static int waiting, wake_pending;

static void wake_all(void *arg)
{
	(void)arg;
	__atomic_store_n(&wake_pending, 0, __ATOMIC_SEQ_CST);
	core_lock();
	__atomic_store_n(&waiting, 0, __ATOMIC_SEQ_CST);
	waitq_wake(&followers);
	core_unlock();
}

static void on_event(void)
{
	if (__atomic_load_n(&waiting, __ATOMIC_SEQ_CST) &&
	    !__atomic_exchange_n(&wake_pending, 1, __ATOMIC_SEQ_CST))
		loop_defer(wake_all, NULL);
}

void journal_follow_init(void)
{
	waitq_init(&followers);
	journal_set_listener(on_event);
}

void journal_follow_shutdown(void)
{
	journal_set_listener(NULL);
}

bool journal_follow_ready(const char *sid, uint64_t off, struct waiter *w)
{
	bool ready;

	core_lock();
	__atomic_store_n(&waiting, 1, __ATOMIC_SEQ_CST);
	ready = off < (sid ? journal_tap_end(sid) : journal_end());
	if (!ready && w)
		waitq_add(&followers, w);
	core_unlock();
	return ready;
}
