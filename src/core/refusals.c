/* The refusals log (refusals.h): a ring of lines behind its own lock, as refusals come from
 * FUSE threads with or without the core lock held. */
#include "refusals.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "escape.h"
#include "journal.h"
#include "termring.h"
#include "xmalloc.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct termring ring;

/* errno's name ("EINVAL"), or its number. */
static const char *errno_name(int err, char *buf, size_t len)
{
	const char *name = strerrorname_np(err);

	if (name)
		return name;
	snprintf(buf, len, "%d", err);
	return buf;
}

/* In the journal, and in its session's lines when the path is one of a session's files. */
static void journal_refusal(const char *path, int err, const char *why)
{
	const char *id = !strncmp(path, "sessions/", 9) ? path + 9 : NULL;
	const char *slash = id ? strchr(id, '/') : NULL;
	char num[16], *sid = slash ? strndup(id, (size_t)(slash - id)) : NULL;
	struct jrec r;

	jrec_begin(&r, "refused", sid);
	free(sid);
	jrec_str(&r, "path", path);
	jrec_str(&r, "errno", errno_name(err, num, sizeof(num)));
	jrec_str(&r, "why", why);
	jrec_commit(&r);
}

void refusal_note(const char *path, int err, const char *fmt, ...)
{
	char *why, *p, *w, *line, stamp[32], num[16];
	struct tm tm;
	time_t now = time(NULL);
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&why, fmt, ap) < 0)
		why = NULL;
	va_end(ap);
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
	p = esc_percent(path, false);
	w = esc_percent(why ? why : "", true);
	line = xasprintf("%s %s %s %s\n", stamp, p, errno_name(err, num, sizeof(num)), w);
	pthread_mutex_lock(&lock);
	if (!ring.buf)
		termring_init(&ring, REFUSALS_MAX);
	termring_put(&ring, line, strlen(line));
	pthread_mutex_unlock(&lock);
	journal_refusal(path, err, why ? why : "");
	free(line);
	free(w);
	free(p);
	free(why);
}

void refusal_note_in(const char *sid, const char *dir, const char *name, int err,
		     const char *why)
{
	char *path = xasprintf("sessions/%s/%s/%s", sid, dir, name);

	refusal_note(path, err, "%s", why);
	free(path);
}

void refusals_read(uint64_t *off, char *buf, size_t size, size_t *n)
{
	pthread_mutex_lock(&lock);
	*n = 0;
	if (ring.buf) {
		if (*off < termring_oldest(&ring))
			*off = termring_oldest(&ring);
		*n = termring_get(&ring, *off, buf, size);
	}
	pthread_mutex_unlock(&lock);
}

uint64_t refusals_end(void)
{
	uint64_t end;

	pthread_mutex_lock(&lock);
	end = ring.end;
	pthread_mutex_unlock(&lock);
	return end;
}
