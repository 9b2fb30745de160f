/* The audit journal: one JSON line per event of the sandbox (docs/journal.md), numbered and
 * stamped here, kept on disk under the state directory in segments with a bound on their total
 * size, so it outlives a restart, and read like a log file: by offsets counted from the first
 * byte ever written, to the current end. Each session also gets its own lines in a ring of
 * JOURNAL_TAP_MAX bytes (a tap, by its id). Any thread, any lock: the journal's lock is taken
 * last. */
#ifndef SBX_JOURNAL_H
#define SBX_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json.h"
#include "waiter.h"

#define JOURNAL_VERSION 1
#define JOURNAL_TAP_MAX (256u << 10)
#define JOURNAL_MAX_DEFAULT (256ull << 20)
#define JOURNAL_MAX_MIN (64ull << 10)

/* Opens the journal in dir (made if missing), picking up where the last daemon left it (its
 * sequence and offsets go on), keeping at most max_bytes on disk. 0, or -errno with err set.
 * Until it is open (and after it is closed), events are dropped: the journal is off. */
int journal_open(const char *dir, uint64_t max_bytes, char *err, size_t errlen);
void journal_close(void);

/* An event being built: its kind, its session (or NULL), then its fields in order. */
struct jrec {
	struct jbuf b;
	char *sid;
};

void jrec_begin(struct jrec *r, const char *kind, const char *sid);
/* A string field: a JSON string when s is well-formed UTF-8, else {"base64": "..."}. */
void jrec_str(struct jrec *r, const char *key, const char *s);
void jrec_strn(struct jrec *r, const char *key, const char *s, size_t len);
void jrec_int(struct jrec *r, const char *key, long long v);
void jrec_bool(struct jrec *r, const char *key, bool v);
/* An event of one string field (key NULL: none), at once. */
void journal_event(const char *kind, const char *sid, const char *key, const char *value);
/* Numbers, stamps and appends the event (to the journal and its session's tap); frees r. */
void jrec_commit(struct jrec *r);

/* The whole journal: its end offset; up to size bytes from *off (moved up to the oldest byte
 * kept) into buf, *n of them, whole lines or not. */
uint64_t journal_end(void);
void journal_read(uint64_t *off, char *buf, size_t size, size_t *n);

/* A session's own lines, by its id: from its tap_open to its tap_close. */
void journal_tap_open(const char *sid);
void journal_tap_close(const char *sid);
uint64_t journal_tap_end(const char *sid);
void journal_tap_read(const char *sid, uint64_t *off, char *buf, size_t size, size_t *n);

/* Called (any thread, journal lock not held) after each event while set. */
void journal_set_listener(void (*fn)(void));

#endif

/* journal_follow.c: polls that wait at the end of the journal (or of a session's tap) for its
 * next event, parked on the loop's waiters. */
void journal_follow_init(void);
void journal_follow_shutdown(void);
/* True if there is something at off (sid: in that session's tap, NULL: the journal); else w
 * is queued and woken at the next event. Takes the core lock. */
bool journal_follow_ready(const char *sid, uint64_t off, struct waiter *w);
