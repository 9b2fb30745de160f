/* The core's event loop thread (epoll): fd watchers, the deferred-call queue, SIGCHLD through a
 * signalfd, and the ready waiters. The core lock is the one mutex that guards session state. */
#include "loop.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/queue.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "waiter.h"
#include "xmalloc.h"

struct loop_fd {
	int fd;
	loop_fd_cb cb;
	void *arg;
	bool dead;
	SLIST_ENTRY(loop_fd) dead_link;
};

struct deferred {
	void (*fn)(void *);
	void *arg;
	STAILQ_ENTRY(deferred) link;
};

static pthread_mutex_t core_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t defer_mutex = PTHREAD_MUTEX_INITIALIZER;
static STAILQ_HEAD(, deferred) deferred = STAILQ_HEAD_INITIALIZER(deferred);
static STAILQ_HEAD(, deferred) after_sync = STAILQ_HEAD_INITIALIZER(after_sync);
static SLIST_HEAD(, loop_fd) dead = SLIST_HEAD_INITIALIZER(dead);
static int epfd = -1, evfd = -1, sigfd = -1, tfd = -1;
static struct loop_timer *timers; /* sorted by deadline */
static void (*sigchld_fn)(void);
static void (*wake_fn)(void);
static pthread_t thread;
static volatile bool stopping;
static bool started;

/* Tokens in epoll data for the loop's own fds; watchers carry struct loop_fd pointers. */
static char tok_event, tok_signal, tok_timer;

void core_lock(void)
{
	pthread_mutex_lock(&core_mutex);
}

void core_unlock(void)
{
	pthread_mutex_unlock(&core_mutex);
}

static int epoll_add_raw(int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = {.events = events, .data.ptr = ptr};

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int loop_init(void)
{
	sigset_t mask;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	/* SIGCHLD is blocked in every thread (main blocks it before any thread starts). */
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (epfd < 0 || evfd < 0 || sigfd < 0 || tfd < 0)
		return -errno;
	if (epoll_add_raw(evfd, EPOLLIN, &tok_event) < 0 ||
	    epoll_add_raw(sigfd, EPOLLIN, &tok_signal) < 0 ||
	    epoll_add_raw(tfd, EPOLLIN, &tok_timer) < 0)
		return -errno;
	return 0;
}

struct loop_fd *loop_add_fd(int fd, uint32_t events, loop_fd_cb cb, void *arg)
{
	struct loop_fd *lf = xcalloc(1, sizeof(*lf));

	lf->fd = fd;
	lf->cb = cb;
	lf->arg = arg;
	if (epoll_add_raw(fd, events, lf) < 0)
		fatal("epoll_ctl add %d", fd);
	return lf;
}

void loop_mod_fd(struct loop_fd *lf, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = lf};

	if (epoll_ctl(epfd, EPOLL_CTL_MOD, lf->fd, &ev) < 0)
		fatal("epoll_ctl mod %d", lf->fd);
}

void loop_del_fd(struct loop_fd *lf)
{
	epoll_ctl(epfd, EPOLL_CTL_DEL, lf->fd, NULL);
	lf->dead = true;
	/* Freed after the current batch: a later event in it may still point here. */
	SLIST_INSERT_HEAD(&dead, lf, dead_link);
}

uint64_t loop_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void timerfd_rearm(void)
{
	struct itimerspec its = {0};

	if (timers) {
		its.it_value.tv_sec = (time_t)(timers->deadline_ns / 1000000000u);
		its.it_value.tv_nsec = (long)(timers->deadline_ns % 1000000000u);
	}
	timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

void loop_timer_cancel(struct loop_timer *t)
{
	struct loop_timer **pp;

	if (!t->armed)
		return;
	for (pp = &timers; *pp; pp = &(*pp)->next) {
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	}
	t->armed = false;
	timerfd_rearm();
}

void loop_timer_arm(struct loop_timer *t, uint64_t ms)
{
	struct loop_timer **pp;

	loop_timer_cancel(t);
	t->deadline_ns = loop_now_ns() + ms * 1000000u;
	for (pp = &timers; *pp && (*pp)->deadline_ns <= t->deadline_ns; pp = &(*pp)->next)
		;
	t->next = *pp;
	*pp = t;
	t->armed = true;
	timerfd_rearm();
}

/* Core lock held. */
static void fire_timers(void)
{
	uint64_t now = loop_now_ns(), ticks;

	if (read(tfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		log_warn("timerfd read");
	while (timers && timers->deadline_ns <= now) {
		struct loop_timer *t = timers;

		timers = t->next;
		t->armed = false;
		t->fn(t);
	}
	timerfd_rearm();
}

void loop_poke(void)
{
	uint64_t one = 1;

	if (write(evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("eventfd write");
}

void loop_defer(void (*fn)(void *), void *arg)
{
	struct deferred *d = xmalloc(sizeof(*d));

	d->fn = fn;
	d->arg = arg;
	pthread_mutex_lock(&defer_mutex);
	STAILQ_INSERT_TAIL(&deferred, d, link);
	pthread_mutex_unlock(&defer_mutex);
	loop_poke();
}

void loop_after_sync(void (*fn)(void *), void *arg)
{
	struct deferred *d = xmalloc(sizeof(*d));

	d->fn = fn;
	d->arg = arg;
	pthread_mutex_lock(&defer_mutex);
	STAILQ_INSERT_TAIL(&after_sync, d, link);
	pthread_mutex_unlock(&defer_mutex);
	loop_poke();
}

bool loop_running(void)
{
	return started && !stopping;
}

bool loop_on_thread(void)
{
	return started && pthread_equal(pthread_self(), thread);
}

void loop_set_sigchld(void (*fn)(void))
{
	sigchld_fn = fn;
}

void loop_set_wake_hook(void (*fn)(void))
{
	wake_fn = fn;
}

static void run_deferred(void)
{
	struct deferred *d;

	for (;;) {
		pthread_mutex_lock(&defer_mutex);
		d = STAILQ_FIRST(&deferred);
		if (d)
			STAILQ_REMOVE_HEAD(&deferred, link);
		pthread_mutex_unlock(&defer_mutex);
		if (!d)
			return;
		d->fn(d->arg);
		free(d);
	}
}

/* The calls queued by loop_after_sync so far, after one more call of the wake hook (sync: the
 * mount is still there to catch up with). */
static void run_after_sync(bool sync)
{
	STAILQ_HEAD(, deferred) batch = STAILQ_HEAD_INITIALIZER(batch);
	struct deferred *d;

	pthread_mutex_lock(&defer_mutex);
	STAILQ_CONCAT(&batch, &after_sync);
	pthread_mutex_unlock(&defer_mutex);
	if (STAILQ_EMPTY(&batch))
		return;
	if (sync && wake_fn)
		wake_fn();
	while ((d = STAILQ_FIRST(&batch))) {
		STAILQ_REMOVE_HEAD(&batch, link);
		d->fn(d->arg);
		free(d);
	}
}

static void drain_signals(void)
{
	struct signalfd_siginfo si;

	while (read(sigfd, &si, sizeof(si)) == sizeof(si))
		;
	if (sigchld_fn)
		sigchld_fn();
}

static void dispatch(struct epoll_event *evs, int n)
{
	uint64_t v;

	core_lock();
	for (int i = 0; i < n; i++) {
		void *p = evs[i].data.ptr;

		if (p == &tok_event) {
			if (read(evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				log_warn("eventfd read");
		} else if (p == &tok_signal) {
			drain_signals();
		} else if (p == &tok_timer) {
			fire_timers();
		} else {
			struct loop_fd *lf = p;

			if (!lf->dead)
				lf->cb(lf, evs[i].events, lf->arg);
		}
	}
	while (!SLIST_EMPTY(&dead)) {
		struct loop_fd *lf = SLIST_FIRST(&dead);

		SLIST_REMOVE_HEAD(&dead, dead_link);
		free(lf);
	}
	core_unlock();
}

static void *loop_main(void *arg)
{
	struct epoll_event evs[64];

	(void)arg;
	while (!stopping) {
		int n = epoll_wait(epfd, evs, 64, -1);

		if (n < 0 && errno != EINTR)
			fatal("epoll_wait");
		if (wake_fn)
			wake_fn();
		if (n > 0)
			dispatch(evs, n);
		run_deferred();
		run_after_sync(true);
		waiters_run_ready();
	}
	return NULL;
}

int loop_start(void)
{
	int rc = pthread_create(&thread, NULL, loop_main, NULL);

	if (rc)
		return -rc;
	started = true;
	return 0;
}

void loop_stop(void)
{
	if (!started)
		return;
	stopping = true;
	loop_poke();
	pthread_join(thread, NULL);
	started = false;
	run_deferred();
	run_after_sync(false);
}
