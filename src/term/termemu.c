/* A terminal's emulator thread (see termemu.h): its queue, its snapshots and watches, when it
 * is given up on, and the mount's caps on emulators and cells. Lock order: the core lock (held
 * by callers on the loop thread), then an emulator's lock, then the caps' lock. */
#include "termemu.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/queue.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "termscreen.h"
#include "xmalloc.h"

/* Bytes fed to the screen at a time: a bound on how long one feed can take. */
#define FEED_BYTES 512
/* The thread's stack: the filter's output and libvterm's decode of one feed are on it. */
#define STACK_BYTES (256u << 10)

struct termemu_watch {
	int refs; /* the opener's, and the thread's while it matches; under the lock */
	struct termemu *e;
	struct rx *rx;
	uint64_t gen; /* the snapshot last matched */
	char *line;   /* what matched, once something did */
	LIST_ENTRY(termemu_watch) link;
};

struct termemu {
	int refs; /* the owner's and the thread's */
	pthread_mutex_t lock;
	pthread_cond_t work; /* the thread waits for something to do */
	pthread_cond_t done; /* readers wait for a snapshot */
	int evfd;
	struct termscreen *ts; /* the thread's alone */
	/* under the lock: */
	char *q; /* ring of TERMEMU_QUEUE_MAX bytes */
	size_t qhead, qlen;
	uint64_t pushed, fed;
	unsigned rows, cols;	       /* the size asked for last */
	uint64_t resizes, resized;     /* sizes asked for, and applied by the thread */
	uint64_t cells;		       /* counted in the caps while counted */
	bool counted;
	struct termsnap *snap;	       /* the latest */
	uint64_t snap_fed, snap_sized; /* fed and resized when it was rendered */
	uint64_t gen;
	uint64_t busy_since; /* when the call into libvterm under way started (ns), 0 if none */
	uint64_t stuck_ns;   /* how long a feed may take */
	bool broken, stop, throttled;
	LIST_HEAD(, termemu_watch) watches;
};

static pthread_mutex_t caps_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t alive, cells_alive;

/* Takes cells (one emulator more if one_more), less the held cells it replaces, from the
 * mount's caps; -ENOSPC. */
static int caps_take(const struct termemu_limits *lim, bool one_more, uint64_t held, uint64_t cells)
{
	int rc = 0;

	pthread_mutex_lock(&caps_lock);
	if ((one_more && alive >= lim->max) || cells_alive - held + cells > lim->cells) {
		rc = -ENOSPC;
	} else {
		alive += one_more;
		cells_alive = cells_alive - held + cells;
	}
	pthread_mutex_unlock(&caps_lock);
	return rc;
}

static void caps_put(uint64_t cells)
{
	pthread_mutex_lock(&caps_lock);
	alive--;
	cells_alive -= cells;
	pthread_mutex_unlock(&caps_lock);
}

static void notify(struct termemu *e)
{
	uint64_t one = 1;

	/* a full counter already says it: EAGAIN is fine */
	if (write(e->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("terminal emulator eventfd");
}

static void unref(struct termemu *e)
{
	struct termemu_watch *w;

	if (__atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL))
		return;
	while ((w = LIST_FIRST(&e->watches))) { /* only if its owner left them */
		LIST_REMOVE(w, link);
		rx_free(w->rx);
		free(w->line);
		free(w);
	}
	termscreen_free(e->ts);
	termsnap_unref(e->snap);
	if (e->counted)
		caps_put(e->cells);
	close(e->evfd);
	pthread_cond_destroy(&e->work);
	pthread_cond_destroy(&e->done);
	pthread_mutex_destroy(&e->lock);
	free(e->q);
	free(e);
}

/* Lock held: gives up on a call into libvterm that has not returned for stuck_ns. */
static void check_stuck(struct termemu *e)
{
	uint64_t now = loop_now_ns();

	if (e->broken || !e->busy_since || now - e->busy_since < e->stuck_ns)
		return;
	log_warnx("a terminal's emulator has not returned for %llu ms: its screen stops there",
		  (unsigned long long)(e->stuck_ns / 1000000));
	e->broken = true;
	e->qlen = 0;
	pthread_cond_broadcast(&e->done);
	notify(e);
}

/* Lock held: the next bytes of the queue into buf. */
static size_t take(struct termemu *e, char *buf, size_t size)
{
	size_t n = e->qlen < size ? e->qlen : size, first = TERMEMU_QUEUE_MAX - e->qhead;

	if (first > n)
		first = n;
	memcpy(buf, e->q + e->qhead, first);
	memcpy(buf + first, e->q, n - first);
	e->qhead = (e->qhead + n) % TERMEMU_QUEUE_MAX;
	e->qlen -= n;
	if (e->throttled && e->qlen < TERMEMU_QUEUE_SOFT / 2) {
		e->throttled = false;
		notify(e);
	}
	return n;
}

static void publish(struct termemu *e, struct termsnap *s, uint64_t fed, uint64_t sized)
{
	s->gen = ++e->gen;
	termsnap_unref(e->snap);
	e->snap = s;
	e->snap_fed = fed;
	e->snap_sized = sized;
	pthread_cond_broadcast(&e->done);
	notify(e);
}

static void watch_drop(struct termemu_watch *w)
{
	if (--w->refs)
		return;
	rx_free(w->rx);
	free(w->line);
	free(w);
}

/* e->lock held: what matching w against s found (line, or NULL), taken over; the first line
 * found stays, and w has now seen s. */
static void watch_record(struct termemu_watch *w, const struct termsnap *s, char *line)
{
	if (w->gen < s->gen)
		w->gen = s->gen;
	if (line && !w->line)
		w->line = line;
	else
		free(line);
}

/* Lock held: matches one watch that has not seen the latest snapshot (the lock is let go
 * meanwhile); false if there is none. */
static bool match_one(struct termemu *e)
{
	struct termemu_watch *w;
	struct termsnap *s = e->snap;
	char *line;

	LIST_FOREACH(w, &e->watches, link)
	if (!w->line && w->gen < s->gen)
		break;
	if (!w)
		return false;
	w->refs++;
	termsnap_ref(s);
	pthread_mutex_unlock(&e->lock);
	line = termsnap_match(s, w->rx);
	pthread_mutex_lock(&e->lock);
	watch_record(w, s, line);
	termsnap_unref(s);
	watch_drop(w);
	notify(e);
	return true;
}

static void *emu_main(void *arg)
{
	struct termemu *e = arg;
	uint64_t published = 0;
	bool dirty = false;
	char chunk[FEED_BYTES];

	pthread_mutex_lock(&e->lock);
	while (!e->stop && !e->broken) {
		/* a snapshot once caught up, and every TERMEMU_PUBLISH_MS while more waits */
		bool due = dirty && ((!e->qlen && e->resized == e->resizes) ||
				     loop_now_ns() - published >= TERMEMU_PUBLISH_MS * 1000000ull);

		/* every call into libvterm is timed (busy_since): any may be the one that does
		 * not return */
		if (due) {
			uint64_t fed = e->fed, sized = e->resized;
			struct termsnap *s;

			e->busy_since = loop_now_ns();
			pthread_mutex_unlock(&e->lock);
			s = termscreen_render(e->ts);
			pthread_mutex_lock(&e->lock);
			e->busy_since = 0;
			publish(e, s, fed, sized);
			published = loop_now_ns();
			dirty = false;
			while (match_one(e))
				;
		} else if (e->resized < e->resizes) {
			unsigned rows = e->rows, cols = e->cols;
			uint64_t n = e->resizes;

			e->busy_since = loop_now_ns();
			pthread_mutex_unlock(&e->lock);
			termscreen_resize(e->ts, rows, cols);
			pthread_mutex_lock(&e->lock);
			e->busy_since = 0;
			e->resized = n;
			dirty = true;
		} else if (e->qlen) {
			size_t n = take(e, chunk, sizeof(chunk));

			e->busy_since = loop_now_ns();
			pthread_mutex_unlock(&e->lock);
			termscreen_feed(e->ts, chunk, n);
			pthread_mutex_lock(&e->lock);
			e->busy_since = 0;
			e->fed += n;
			dirty = true;
		} else if (!match_one(e)) {
			pthread_cond_wait(&e->work, &e->lock);
		}
	}
	pthread_mutex_unlock(&e->lock);
	unref(e);
	return NULL;
}

int termemu_new(unsigned rows, unsigned cols, const struct termemu_limits *lim,
		struct termemu **out)
{
	uint64_t cells = (uint64_t)rows * cols;
	struct termemu *e;
	pthread_condattr_t ca;
	pthread_attr_t ta;
	pthread_t thread;
	int rc;

	*out = NULL;
	if ((rc = caps_take(lim, true, 0, cells)) < 0)
		return rc;
	e = xcalloc(1, sizeof(*e));
	e->refs = 2;
	e->cells = cells;
	e->counted = true;
	e->stuck_ns = lim->stuck_ms * 1000000ull;
	e->rows = rows;
	e->cols = cols;
	e->q = xmalloc(TERMEMU_QUEUE_MAX);
	e->snap = termsnap_blank(rows, cols);
	e->ts = termscreen_new(rows, cols);
	LIST_INIT(&e->watches);
	e->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (e->evfd < 0)
		fatal("eventfd");
	pthread_mutex_init(&e->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->work, &ca);
	pthread_cond_init(&e->done, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_init(&ta);
	pthread_attr_setstacksize(&ta, STACK_BYTES);
	/* never joined: shutdown must not wait for a feed that does not return */
	pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&thread, &ta, emu_main, e);
	pthread_attr_destroy(&ta);
	if (rc) {
		e->refs = 1;
		unref(e);
		return -EAGAIN;
	}
	*out = e;
	return 0;
}

/* Lock held. Its room is given back now, unless a call into libvterm is under way: then when
 * its thread ends, which a stuck one never does. */
static void give_back(struct termemu *e)
{
	if (e->counted && !e->busy_since) {
		caps_put(e->cells);
		e->counted = false;
	}
}

void termemu_give_back(struct termemu *e)
{
	pthread_mutex_lock(&e->lock);
	give_back(e);
	pthread_mutex_unlock(&e->lock);
}

void termemu_release(struct termemu *e)
{
	pthread_mutex_lock(&e->lock);
	give_back(e);
	e->stop = true;
	pthread_cond_signal(&e->work);
	pthread_cond_broadcast(&e->done);
	pthread_mutex_unlock(&e->lock);
	unref(e);
}

int termemu_fd(const struct termemu *e)
{
	return e->evfd;
}

void termemu_clear_fd(struct termemu *e)
{
	uint64_t v;

	if (read(e->evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_warn("terminal emulator eventfd");
}

size_t termemu_room(struct termemu *e)
{
	size_t room;

	pthread_mutex_lock(&e->lock);
	check_stuck(e);
	if (e->broken) {
		room = SIZE_MAX;
	} else {
		room = e->qlen < TERMEMU_QUEUE_SOFT ? TERMEMU_QUEUE_SOFT - e->qlen : 0;
		if (room == 0)
			e->throttled = true;
	}
	pthread_mutex_unlock(&e->lock);
	return room;
}

void termemu_push(struct termemu *e, const char *data, size_t len)
{
	size_t n, at, first;

	pthread_mutex_lock(&e->lock);
	n = e->broken ? 0 : TERMEMU_QUEUE_MAX - e->qlen;
	if (n > len)
		n = len;
	at = (e->qhead + e->qlen) % TERMEMU_QUEUE_MAX;
	first = TERMEMU_QUEUE_MAX - at < n ? TERMEMU_QUEUE_MAX - at : n;
	memcpy(e->q + at, data, first);
	memcpy(e->q, data + first, n - first);
	e->qlen += n;
	e->pushed += n;
	if (n)
		pthread_cond_signal(&e->work);
	pthread_mutex_unlock(&e->lock);
}

int termemu_resize(struct termemu *e, unsigned rows, unsigned cols,
		   const struct termemu_limits *lim)
{
	uint64_t cells = (uint64_t)rows * cols;
	int rc;

	pthread_mutex_lock(&e->lock);
	rc = caps_take(lim, false, e->cells, cells);
	if (rc == 0) {
		e->cells = cells;
		e->rows = rows;
		e->cols = cols;
		e->resizes++;
		pthread_cond_signal(&e->work);
	}
	pthread_mutex_unlock(&e->lock);
	return rc;
}

struct termsnap *termemu_snapshot(struct termemu *e, unsigned timeout_ms, bool *broken)
{
	struct timespec deadline;
	struct termsnap *s;
	uint64_t pushed, resizes;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&e->lock);
	pushed = e->pushed;
	resizes = e->resizes;
	while ((e->snap_fed < pushed || e->snap_sized < resizes) && !e->broken && !e->stop)
		if (pthread_cond_timedwait(&e->done, &e->lock, &deadline) == ETIMEDOUT)
			break;
	check_stuck(e);
	s = e->snap;
	termsnap_ref(s);
	*broken = e->broken;
	pthread_mutex_unlock(&e->lock);
	return s;
}

struct termemu_watch *termemu_watch_add(struct termemu *e, struct rx *rx)
{
	struct termemu_watch *w = xcalloc(1, sizeof(*w));

	w->refs = 1;
	w->e = e;
	w->rx = rx;
	pthread_mutex_lock(&e->lock);
	LIST_INSERT_HEAD(&e->watches, w, link);
	pthread_cond_signal(&e->work);
	pthread_mutex_unlock(&e->lock);
	return w;
}

void termemu_watch_remove(struct termemu_watch *w)
{
	struct termemu *e = w->e;

	pthread_mutex_lock(&e->lock);
	LIST_REMOVE(w, link);
	watch_drop(w);
	pthread_mutex_unlock(&e->lock);
}

void termemu_watch_scan(struct termemu_watch *w)
{
	struct termemu *e = w->e;
	struct termsnap *s;
	char *line;

	pthread_mutex_lock(&e->lock);
	s = e->snap;
	termsnap_ref(s);
	pthread_mutex_unlock(&e->lock);
	line = termsnap_match(s, w->rx);
	pthread_mutex_lock(&e->lock);
	watch_record(w, s, line);
	pthread_mutex_unlock(&e->lock);
	termsnap_unref(s);
}

char *termemu_watch_result(struct termemu_watch *w, bool *final)
{
	struct termemu *e = w->e;
	char *line;

	pthread_mutex_lock(&e->lock);
	line = w->line ? xstrdup(w->line) : NULL;
	*final = e->broken || (e->snap_fed == e->pushed && e->snap_sized == e->resizes &&
			       w->gen == e->snap->gen);
	pthread_mutex_unlock(&e->lock);
	return line;
}
