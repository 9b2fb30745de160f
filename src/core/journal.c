/* The journal's events (journal.h): built field by field, then numbered, stamped and handed to
 * the writer (journal_flush.c) under one lock, so sequence numbers and offsets grow together;
 * each session's lines also go to its tap. */
#include "journal.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "journal_priv.h"
#include "termring.h"
#include "xmalloc.h"

#define TAP_BUCKETS 64

struct tap {
	char *sid;
	struct termring ring;
	struct tap *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool on; /* open: events are kept */
static uint64_t last_seq;
static struct tap *taps[TAP_BUCKETS];
static void (*listener)(void);

int journal_open(const char *dir, uint64_t max_bytes, char *err, size_t errlen)
{
	int rc;

	if (max_bytes < JOURNAL_MAX_MIN)
		max_bytes = JOURNAL_MAX_MIN;
	pthread_mutex_lock(&lock);
	rc = jflush_open_store(dir, max_bytes, &last_seq, err, errlen);
	if (rc == 0 && (rc = jflush_start()) < 0) {
		snprintf(err, errlen, "the journal's writer thread: %s", strerror(-rc));
		jflush_close_store();
	}
	on = rc == 0;
	pthread_mutex_unlock(&lock);
	return rc;
}

static void free_taps(void)
{
	for (int i = 0; i < TAP_BUCKETS; i++)
		while (taps[i]) {
			struct tap *t = taps[i];

			taps[i] = t->next;
			termring_free(&t->ring);
			free(t->sid);
			free(t);
		}
}

void journal_close(void)
{
	pthread_mutex_lock(&lock);
	on = false;
	pthread_mutex_unlock(&lock);
	jflush_stop(); /* everything handed over is on disk */
	jflush_close_store();
	pthread_mutex_lock(&lock);
	free_taps();
	pthread_mutex_unlock(&lock);
}

void jrec_begin(struct jrec *r, const char *kind, const char *sid)
{
	memset(r, 0, sizeof(*r));
	jbuf_printf(&r->b, "\"kind\":\"%s\"", kind);
	if (sid) {
		r->sid = xstrdup(sid);
		jrec_str(r, "session", sid);
	}
}

void jrec_strn(struct jrec *r, const char *key, const char *s, size_t len)
{
	jbuf_printf(&r->b, ",\"%s\":", key);
	if (utf8_prefix(s, len, NULL) == len) {
		json_string(&r->b, s, len);
		return;
	}
	jbuf_add(&r->b, "{\"base64\":", 10);
	json_base64(&r->b, s, len);
	jbuf_add(&r->b, "}", 1);
}

void jrec_str(struct jrec *r, const char *key, const char *s)
{
	jrec_strn(r, key, s, strlen(s));
}

void jrec_int(struct jrec *r, const char *key, long long v)
{
	jbuf_printf(&r->b, ",\"%s\":%lld", key, v);
}

void jrec_bool(struct jrec *r, const char *key, bool v)
{
	jbuf_printf(&r->b, ",\"%s\":%s", key, v ? "true" : "false");
}

static struct tap **tap_slot(const char *sid)
{
	uint32_t h = 2166136261u;
	struct tap **t;

	for (const char *p = sid; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	for (t = &taps[h % TAP_BUCKETS]; *t; t = &(*t)->next)
		if (!strcmp((*t)->sid, sid))
			break;
	return t;
}

static char *stamp_line(const struct jrec *r, uint64_t seq, size_t *len)
{
	struct timespec ts;
	struct tm tm;
	char when[32], *line;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	line = xasprintf("{\"v\":%d,\"seq\":%" PRIu64 ",\"time\":\"%s.%06ldZ\",%.*s}\n",
			 JOURNAL_VERSION, seq, when, ts.tv_nsec / 1000, (int)r->b.len, r->b.p);
	*len = strlen(line);
	return line;
}

static void jrec_free(struct jrec *r)
{
	free(r->b.p);
	free(r->sid);
}

void jrec_commit(struct jrec *r)
{
	void (*fn)(void);
	struct tap **t;
	size_t len;
	char *line;

	pthread_mutex_lock(&lock);
	if (!on) {
		pthread_mutex_unlock(&lock);
		jrec_free(r);
		return;
	}
	line = stamp_line(r, ++last_seq, &len);
	jflush_put(line, len);
	if (r->sid && *(t = tap_slot(r->sid)))
		termring_put(&(*t)->ring, line, len);
	fn = listener;
	pthread_mutex_unlock(&lock);
	free(line);
	jrec_free(r);
	if (fn)
		fn();
}

void journal_event(const char *kind, const char *sid, const char *key, const char *value)
{
	struct jrec r;

	jrec_begin(&r, kind, sid);
	if (key)
		jrec_str(&r, key, value);
	jrec_commit(&r);
}

uint64_t journal_end(void)
{
	return jflush_end();
}

void journal_read(uint64_t *off, char *buf, size_t size, size_t *n)
{
	jflush_read(off, buf, size, n);
}

void journal_tap_open(const char *sid)
{
	struct tap **t, *tap;

	pthread_mutex_lock(&lock);
	t = tap_slot(sid);
	if (!*t) {
		tap = xcalloc(1, sizeof(*tap));
		tap->sid = xstrdup(sid);
		termring_init(&tap->ring, JOURNAL_TAP_MAX);
		*t = tap;
	}
	pthread_mutex_unlock(&lock);
}

void journal_tap_close(const char *sid)
{
	struct tap **t, *tap;

	pthread_mutex_lock(&lock);
	t = tap_slot(sid);
	if ((tap = *t)) {
		*t = tap->next;
		termring_free(&tap->ring);
		free(tap->sid);
		free(tap);
	}
	pthread_mutex_unlock(&lock);
}

uint64_t journal_tap_end(const char *sid)
{
	struct tap *tap;
	uint64_t end;

	pthread_mutex_lock(&lock);
	tap = *tap_slot(sid);
	end = tap ? tap->ring.end : 0;
	pthread_mutex_unlock(&lock);
	return end;
}

void journal_tap_read(const char *sid, uint64_t *off, char *buf, size_t size, size_t *n)
{
	struct tap *tap;

	pthread_mutex_lock(&lock);
	*n = 0;
	if ((tap = *tap_slot(sid))) {
		if (*off < termring_oldest(&tap->ring))
			*off = termring_oldest(&tap->ring);
		*n = termring_get(&tap->ring, *off, buf, size);
	}
	pthread_mutex_unlock(&lock);
}

void journal_set_listener(void (*fn)(void))
{
	pthread_mutex_lock(&lock);
	listener = fn;
	pthread_mutex_unlock(&lock);
}
