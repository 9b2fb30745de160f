/* A snapshot's status text: its state, what it holds and what taking it cost, progress while it
 * is taken or restored, and the outcome of the last restore. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "elapsed.h"
#include "escape.h"
#include "snapshot_priv.h"
#include "xmalloc.h"

static const char *const state_names[] = {
    [SS_TAKING] = "taking",
    [SS_IMPORTING] = "importing",
    [SS_READY] = "ready",
    [SS_RESTORING] = "restoring",
};

static void put_time(FILE *f, struct timespec t)
{
	struct tm tm;
	char buf[32];

	gmtime_r(&t.tv_sec, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(f, "time %s.%03ldZ\n", buf, t.tv_nsec / 1000000);
}

/* Work under way: what it does and how far it got (snap_lock held). */
static void put_progress(FILE *f, const struct snapshot *s)
{
	const struct tree_stats *p = s->progress;
	uint64_t files = p ? __atomic_load_n(&p->files, __ATOMIC_RELAXED) : 0;
	uint64_t bytes = p ? __atomic_load_n(&p->bytes, __ATOMIC_RELAXED) : 0;
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	fprintf(f, "phase %s\n", s->phase ? s->phase : "queued");
	fprintf(f, "progress_files %" PRIu64 "\n", files);
	fprintf(f, "progress_bytes %" PRIu64 "\n", bytes);
	if (s->total_files)
		fprintf(f, "total_files %" PRIu64 "\n", s->total_files);
	if (s->total_bytes)
		fprintf(f, "total_bytes %" PRIu64 "\n", s->total_bytes);
	if (s->total_bytes || s->total_files)
		fprintf(
		    f, "percent %u\n",
		    (unsigned)(s->total_bytes
				   ? (bytes > s->total_bytes ? 100 : bytes * 100 / s->total_bytes)
				   : (files > s->total_files ? 100
							     : files * 100 / s->total_files)));
	fprintf(f, "elapsed_ms %llu\n", (unsigned long long)elapsed_ms(&s->started, &now));
}

static void put_meta(FILE *f, const struct snap_meta *m)
{
	put_time(f, m->time);
	fprintf(f, "size %" PRIu64 "\nfiles %" PRIu64 "\nspace %" PRIu64 "\n", m->bytes, m->files,
		m->space);
	fprintf(f, "took_ms %" PRIu64 "\n", m->took_ms);
	if (m->ws_ino) {
		fprintf(f, "origin taken\n");
		fprintf(f, "frozen %s\nfrozen_ms %" PRIu64 "\n", m->frozen ? "yes" : "no",
			m->frozen_ms);
		fprintf(f, "reflinks %s\n", m->reflinked ? "yes" : "no");
	} else {
		fprintf(f, "origin imported\n");
	}
	if (m->root[0]) { /* a directory's snapshot: the directory, in the shown form */
		char *root = esc_encode(m->root, strlen(m->root), &(size_t){0});

		fprintf(f, "root %s\n", root);
		free(root);
	}
}

char *snapshot_status(struct snapshot *s, size_t *len)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	if (!f)
		return xstrdup("");
	pthread_mutex_lock(&snap_lock);
	fprintf(f, "state %s\n", s->removed ? "deleted" : state_names[s->state]);
	if (s->state == SS_READY || s->state == SS_RESTORING)
		put_meta(f, &s->meta);
	if (s->state != SS_READY)
		put_progress(f, s);
	if (s->restored) {
		fprintf(f, "restore %s\n", s->restore_rc == 0 ? "ok" : strerror(-s->restore_rc));
		if (s->restore_rc == -EBUSY && s->restore_busy[0])
			fprintf(f, "restore_busy %s\n", s->restore_busy);
		fprintf(f, "restore_ms %" PRIu64 "\nrestore_files %" PRIu64 "\n", s->restore_ms,
			s->restored_files);
	}
	pthread_mutex_unlock(&snap_lock);
	fclose(f);
	*len = size;
	return text;
}
