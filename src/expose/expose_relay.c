/* The relay thread (see expose_relay.h): an epoll loop over the listeners, the connections
 * (expose_conn.c) and an eventfd through which other threads hand it calls. Listeners and
 * connections change only on this thread; relay_listen and relay_unlisten run there as calls
 * that the caller waits for, so when unlisten returns the port is closed. */
#include "expose_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "expose_conn.h"
#include "log.h"
#include "xmalloc.h"

/* Accepts per listener and event: the rest wait for the next round (level-triggered). */
#define ACCEPT_BATCH 32
#define MAX_EVENTS   64

int relay_epfd = -1;
static int wake_fd = -1;
static struct tag wake_tag = {TAG_WAKE, NULL};
static pthread_t thread;
static bool running;
static unsigned max_conns;
static bool stopping;	  /* relay thread */
static int spare_fd = -1; /* given up to accept, and reset, a connection past EMFILE */
static LIST_HEAD(, relay_listener) listeners = LIST_HEAD_INITIALIZER(listeners);
static LIST_HEAD(, relay_listener) dead_listeners = LIST_HEAD_INITIALIZER(dead_listeners);

/* The call another thread waits for: one at a time. */
static pthread_mutex_t call_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t call_cond = PTHREAD_COND_INITIALIZER;
static struct call {
	void (*fn)(void *arg);
	void *arg;
	bool done;
} * pending;

/* Runs fn(arg) on the relay thread and returns once it has. */
static void relay_call(void (*fn)(void *), void *arg)
{
	struct call c = {fn, arg, false};
	uint64_t one = 1;

	pthread_mutex_lock(&call_lock);
	while (pending)
		pthread_cond_wait(&call_cond, &call_lock);
	pending = &c;
	if (write(wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("exposed ports: waking the relay");
	while (!c.done)
		pthread_cond_wait(&call_cond, &call_lock);
	pending = NULL;
	pthread_cond_broadcast(&call_cond);
	pthread_mutex_unlock(&call_lock);
}

static void run_call(void)
{
	uint64_t n;

	if (read(wake_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return;
	pthread_mutex_lock(&call_lock);
	if (pending && !pending->done) {
		pending->fn(pending->arg);
		pending->done = true;
		pthread_cond_broadcast(&call_cond);
	}
	pthread_mutex_unlock(&call_lock);
}

/* Out of descriptors: the listener would report the same connection forever. The spare gives
 * one back for long enough to take the connection off the queue and reset it. */
static void accept_starved(struct relay_listener *l)
{
	int fd;

	if (spare_fd >= 0)
		close(spare_fd);
	fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0) {
		atomic_fetch_add(&l->st->refused, 1);
		close(fd);
	}
	spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void accept_some(struct relay_listener *l)
{
	for (int i = 0; i < ACCEPT_BATCH && !l->dead; i++) {
		int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd >= 0) {
			conn_open(l, fd, max_conns);
			continue;
		}
		if (errno == EMFILE || errno == ENFILE)
			accept_starved(l);
		else if (errno != EINTR && errno != ECONNABORTED)
			return; /* EAGAIN: the queue is empty */
	}
}

static void dispatch(struct epoll_event *ev)
{
	struct tag *t = ev->data.ptr;

	switch (t->kind) {
	case TAG_WAKE:
		run_call();
		break;
	case TAG_LISTENER:
		if (!((struct relay_listener *)t->p)->dead)
			accept_some(t->p);
		break;
	case TAG_HOST:
	case TAG_SANDBOX:
		conn_event(t->p, t->kind);
		break;
	}
}

/* What was closed during a round is freed once no event in hand can name it. */
static void reap(void)
{
	struct relay_listener *l;

	conn_reap();
	while ((l = LIST_FIRST(&dead_listeners))) {
		LIST_REMOVE(l, link);
		free(l);
	}
}

static void *relay_main(void *arg)
{
	struct epoll_event evs[MAX_EVENTS];

	(void)arg;
	while (!stopping) {
		int n = epoll_wait(relay_epfd, evs, MAX_EVENTS, conn_any_busy() ? 0 : -1);

		/* Never leave the loop before relay_stop's call: callers wait on it. */
		if (n < 0 && errno != EINTR) {
			log_warn("exposed ports: epoll_wait");
			nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
		}
		for (int i = 0; i < n; i++)
			dispatch(&evs[i]);
		conn_run_busy();
		reap();
	}
	return NULL;
}

struct listen_call {
	int fd;
	unsigned port;
	struct relay_stats *st;
	struct relay_listener *l;
};

static void do_listen(void *arg)
{
	struct listen_call *c = arg;
	struct relay_listener *l = xcalloc(1, sizeof(*l));
	struct epoll_event ev = {.events = EPOLLIN};

	*l = (struct relay_listener){
	    .tag = {TAG_LISTENER, l}, .fd = c->fd, .port = c->port, .st = c->st};
	LIST_INIT(&l->conns);
	ev.data.ptr = &l->tag;
	if (epoll_ctl(relay_epfd, EPOLL_CTL_ADD, l->fd, &ev) < 0)
		log_warn("exposed ports: watching the listener of port %u", l->port);
	LIST_INSERT_HEAD(&listeners, l, link);
	c->l = l;
}

struct relay_listener *relay_listen(int fd, unsigned port, struct relay_stats *st)
{
	struct listen_call c = {fd, port, st, NULL};

	relay_call(do_listen, &c);
	return c.l;
}

static void close_listener(struct relay_listener *l)
{
	while (!LIST_EMPTY(&l->conns))
		conn_reset(LIST_FIRST(&l->conns));
	close(l->fd);
	l->dead = true;
	LIST_REMOVE(l, link);
	LIST_INSERT_HEAD(&dead_listeners, l, link);
}

static void do_unlisten(void *arg)
{
	close_listener(arg);
}

void relay_unlisten(struct relay_listener *l)
{
	relay_call(do_unlisten, l);
}

static void do_stop(void *arg)
{
	(void)arg;
	while (!LIST_EMPTY(&listeners))
		close_listener(LIST_FIRST(&listeners));
	stopping = true;
}

int relay_start(unsigned max)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &wake_tag};
	sigset_t all, old;
	int rc;

	max_conns = max;
	relay_epfd = epoll_create1(EPOLL_CLOEXEC);
	wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (relay_epfd < 0 || wake_fd < 0 || epoll_ctl(relay_epfd, EPOLL_CTL_ADD, wake_fd, &ev) < 0)
		return -errno;
	/* No signal for this thread: the daemon's are handled elsewhere, and a splice to a socket
	 * its peer closed raises SIGPIPE where the EPIPE is enough. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&thread, NULL, relay_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return -rc;
	running = true;
	return 0;
}

void relay_stop(void)
{
	if (running) {
		relay_call(do_stop, NULL);
		pthread_join(thread, NULL);
		running = false;
		reap();
	}
	if (relay_epfd >= 0)
		close(relay_epfd);
	if (wake_fd >= 0)
		close(wake_fd);
	if (spare_fd >= 0)
		close(spare_fd);
	relay_epfd = wake_fd = spare_fd = -1;
}
