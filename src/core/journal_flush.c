/* The journal's way to disk (journal_priv.h): a line is handed over in memory, and a thread of
 * its own writes what has piled up to the segment files at most FLUSH_MS later (sooner once
 * FLUSH_BYTES are waiting), so an event costs its caller a copy, not a write() nor a thread's
 * wakeup. The bytes not yet on disk are read from memory at their offsets, so a reader sees an
 * event the moment it is handed over. A line the disk refuses is counted, logged once,
 * and said by a "journal.lost" event: a gap in the numbers is never silent. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "journal.h"
#include "journal_priv.h"
#include "json.h"
#include "log.h"

#define FLUSH_MS    50
#define FLUSH_BYTES (64u << 10)

static pthread_mutex_t buf_lock = PTHREAD_MUTEX_INITIALIZER;   /* the two buffers */
static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER; /* the files */
static pthread_cond_t more;				       /* on CLOCK_MONOTONIC */
static pthread_t writer;
static bool running, stopping;
/* handed over, not yet taken by the writer, from pending_off on; and what the writer is
 * writing now, from flushing_off on (pending_off = flushing_off + flushing.len) */
static struct jbuf pending, flushing;
static uint64_t pending_off, flushing_off;
static uint64_t lost;

/* Writes each whole line of b, one write() each (a segment ends only between lines); true if
 * the last one went to disk. */
static bool write_lines(const struct jbuf *b)
{
	int rc = 0;

	for (size_t at = 0; at < b->len;) {
		const char *nl = memchr(b->p + at, '\n', b->len - at);
		size_t len = (size_t)(nl - (b->p + at)) + 1;
		rc = jstore_append(b->p + at, len);
		if (rc < 0 && !lost++)
			log_warnx("journal: cannot write an event (%s); counting the lost ones",
				  strerror(-rc));
		at += len;
	}
	return rc == 0;
}

static void note_lost(void)
{
	struct jrec r;

	jrec_begin(&r, "journal.lost", NULL);
	jrec_int(&r, "count", (long long)lost);
	lost = 0;
	jrec_commit(&r);
}

/* buf_lock held: the first line came; let more pile up, for a while. */
static void wait_for_more(void)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += FLUSH_MS * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (pending.len < FLUSH_BYTES && !stopping &&
	       pthread_cond_timedwait(&more, &buf_lock, &until) == 0)
		;
}

static void *write_loop(void *arg)
{
	bool written;

	(void)arg;
	pthread_mutex_lock(&buf_lock);
	for (;;) {
		while (!pending.len && !stopping)
			pthread_cond_wait(&more, &buf_lock);
		if (!pending.len)
			break;
		wait_for_more();
		flushing = pending;
		flushing_off = pending_off;
		pending_off += pending.len;
		pending = (struct jbuf){0};
		pthread_mutex_unlock(&buf_lock);

		pthread_mutex_lock(&store_lock);
		written = write_lines(&flushing);
		pthread_mutex_unlock(&store_lock);
		/* only once the disk takes lines again: a note that fails would make another */
		if (lost && written)
			note_lost();

		pthread_mutex_lock(&buf_lock);
		free(flushing.p);
		flushing = (struct jbuf){0};
		flushing_off = pending_off;
	}
	pthread_mutex_unlock(&buf_lock);
	return NULL;
}

int jflush_start(void)
{
	pthread_condattr_t ca;
	sigset_t all, was;
	int rc;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&more, &ca);
	pthread_condattr_destroy(&ca);
	pending_off = flushing_off = jstore_end();
	stopping = false;
	lost = 0;
	/* No signal for it: a SIGCHLD it took would never reach the loop's signalfd. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &was);
	rc = -pthread_create(&writer, NULL, write_loop, NULL);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	running = rc == 0;
	return rc;
}

void jflush_stop(void)
{
	if (!running)
		return;
	pthread_mutex_lock(&buf_lock);
	stopping = true;
	pthread_cond_signal(&more);
	pthread_mutex_unlock(&buf_lock);
	pthread_join(writer, NULL);
	pthread_cond_destroy(&more);
	running = false;
}

void jflush_put(const char *line, size_t len)
{
	pthread_mutex_lock(&buf_lock);
	/* a wakeup for the first line, and for the line that makes enough */
	if (!pending.len || (pending.len < FLUSH_BYTES && pending.len + len >= FLUSH_BYTES))
		pthread_cond_signal(&more);
	jbuf_add(&pending, line, len);
	pthread_mutex_unlock(&buf_lock);
}

uint64_t jflush_end(void)
{
	uint64_t end;

	pthread_mutex_lock(&buf_lock);
	end = pending_off + pending.len;
	pthread_mutex_unlock(&buf_lock);
	return end;
}

/* buf_lock held: up to size bytes from at (at least the disk's end) out of memory. */
static size_t from_memory(uint64_t at, char *buf, size_t size)
{
	size_t n = 0;

	if (at >= flushing_off && at < flushing_off + flushing.len) {
		n = (size_t)(flushing_off + flushing.len - at) < size
			? (size_t)(flushing_off + flushing.len - at)
			: size;
		memcpy(buf, flushing.p + (at - flushing_off), n);
		at += n;
	}
	if (n < size && at >= pending_off && at < pending_off + pending.len) {
		size_t m = (size_t)(pending_off + pending.len - at) < size - n
			       ? (size_t)(pending_off + pending.len - at)
			       : size - n;

		memcpy(buf + n, pending.p + (at - pending_off), m);
		n += m;
	}
	return n;
}

void jflush_read(uint64_t *off, char *buf, size_t size, size_t *n)
{
	uint64_t disk_end;

	pthread_mutex_lock(&store_lock);
	jstore_read(off, buf, size, n);
	disk_end = jstore_end();
	pthread_mutex_lock(&buf_lock);
	if (*n < size && *off + *n >= disk_end)
		*n += from_memory(*off + *n, buf + *n, size - *n);
	pthread_mutex_unlock(&buf_lock);
	pthread_mutex_unlock(&store_lock);
}

int jflush_open_store(const char *dir, uint64_t max, uint64_t *last_seq, char *err, size_t errlen)
{
	int rc;

	pthread_mutex_lock(&store_lock);
	rc = jstore_open(dir, max, last_seq, err, errlen);
	pthread_mutex_unlock(&store_lock);
	return rc;
}

void jflush_close_store(void)
{
	pthread_mutex_lock(&store_lock);
	jstore_close();
	pthread_mutex_unlock(&store_lock);
}
