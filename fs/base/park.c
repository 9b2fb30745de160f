/* Parked requests (see park.h). Everything after the hand-off runs on the loop thread, so the
 * only races are with the interrupt callback, which runs on any thread with libfuse's request
 * lock held: it may only mark the park and defer, and it finds the park by request in a table,
 * never through a pointer that might already be freed. */
#include "park.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/queue.h>

#include "loop.h"
#include "xmalloc.h"

struct park {
	fuse_req_t req;
	uint64_t id;
	struct waiter w;
	park_attempt_fn attempt;
	void *arg;
	void (*free_arg)(void *);
	bool interrupted; /* under table_lock */
	LIST_ENTRY(park) link;
};

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static LIST_HEAD(, park) table = LIST_HEAD_INITIALIZER(table);
static uint64_t next_id = 1;

struct waiter *park_waiter(struct park *p)
{
	return &p->w;
}

fuse_req_t park_req(struct park *p)
{
	return p->req;
}

void *park_arg(struct park *p)
{
	return p->arg;
}

static bool is_interrupted(struct park *p)
{
	bool yes;

	pthread_mutex_lock(&table_lock);
	yes = p->interrupted;
	pthread_mutex_unlock(&table_lock);
	return yes;
}

static void park_end(struct park *p)
{
	pthread_mutex_lock(&table_lock);
	LIST_REMOVE(p, link);
	pthread_mutex_unlock(&table_lock);
	if (p->free_arg)
		p->free_arg(p->arg);
	free(p);
}

/* Loop thread: answer or wait again. */
static void park_try(struct park *p)
{
	if (is_interrupted(p)) {
		fuse_reply_err(p->req, EINTR);
		park_end(p);
		return;
	}
	if (p->attempt(p) == 0)
		park_end(p);
}

static void park_woken(struct waiter *w)
{
	park_try(container_of(w, struct park, w));
}

static void park_first(void *arg)
{
	park_try(arg);
}

/* Loop thread: an interrupt came for park id. */
static void park_interrupt_deferred(void *arg)
{
	uint64_t id = (uint64_t)(uintptr_t)arg;
	struct park *p;

	pthread_mutex_lock(&table_lock);
	LIST_FOREACH(p, &table, link)
		if (p->id == id)
			break;
	pthread_mutex_unlock(&table_lock);
	/* Not queued means its first attempt is still pending: that attempt sees the flag. */
	if (p && waiter_cancel(&p->w)) {
		fuse_reply_err(p->req, EINTR);
		park_end(p);
	}
}

static void park_interrupt_cb(fuse_req_t req, void *data)
{
	struct park *p;

	(void)data;
	pthread_mutex_lock(&table_lock);
	LIST_FOREACH(p, &table, link) {
		if (p->req == req && !p->interrupted) {
			p->interrupted = true;
			loop_defer(park_interrupt_deferred, (void *)(uintptr_t)p->id);
			break;
		}
	}
	pthread_mutex_unlock(&table_lock);
}

void park_request(fuse_req_t req, park_attempt_fn attempt, void *arg, void (*free_arg)(void *))
{
	struct park *p = xcalloc(1, sizeof(*p));

	p->req = req;
	p->attempt = attempt;
	p->arg = arg;
	p->free_arg = free_arg;
	p->w.wake = park_woken;
	pthread_mutex_lock(&table_lock);
	p->id = next_id++;
	LIST_INSERT_HEAD(&table, p, link);
	pthread_mutex_unlock(&table_lock);
	/* Registered before the hand-off: after it, p may be answered and freed at any time. */
	fuse_req_interrupt_func(req, park_interrupt_cb, NULL);
	loop_defer(park_first, p);
}
