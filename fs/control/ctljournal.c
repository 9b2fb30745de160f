/* The audit journal's files (journal.h, docs/journal.md): `journal` at the root and in each
 * session reads like a log file on disk (to its current end, then EOF; tail -f follows its
 * size), and poll() on an open of it says when an event lies past its last read, so a
 * follower waits without a read that blocks (a host tool that reads it never waits). */
#include <stdlib.h>

#include "ctl.h"
#include "ctlfile_priv.h"
#include "journal.h"
#include "session.h"
#include "xmalloc.h"

/* The session whose tap a handle reads, or NULL for the whole journal. */
static const char *tap_of(const struct ctlfh *fh)
{
	return fh->kind == K_SJOURNAL ? session_id(fh->s) : NULL;
}

static void size_journal(struct ctlfh *fh, struct stat *st)
{
	const char *sid = tap_of(fh);

	st->st_size = (off_t)(sid ? journal_tap_end(sid) : journal_end());
}

static void read_journal(const void *src, uint64_t *off, char *buf, size_t size, size_t *n)
{
	if (src)
		journal_tap_read(src, off, buf, size, n);
	else
		journal_read(off, buf, size, n);
}

static int read_log(fuse_req_t req, struct fhandle *h, size_t size, off_t off, struct waiter *w)
{
	struct ctlfh *fh = container_of(h, struct ctlfh, h);

	(void)w; /* never waits */
	return ctl_read_log(req, fh, size, off, read_journal, tap_of(fh));
}

/* h->lock held: ready once something lies past the last read. */
static bool poll_journal(struct fhandle *h, struct waiter *w)
{
	struct ctlfh *fh = container_of(h, struct ctlfh, h);

	return journal_follow_ready(tap_of(fh), (uint64_t)fh->pos + fh->shift, w);
}

const struct kind_info journal_row = {
    .name = "journal",
    .help = "the audit journal: a JSON line per event (docs/journal.md); reads to its end, "
	    "poll() waits for the next",
    .mode = S_IFREG | 0444,
    .where = IN_ROOT,
    .flags = KF_ROOT,
    .size = size_journal,
    .read = read_log,
    .poll = poll_journal,
};

const struct kind_info sjournal_row = {
    .name = "journal",
    .help = "the session's lines of the journal (the last 256 KiB); reads to its end",
    .mode = S_IFREG | 0444,
    .where = IN_SESSION,
    .size = size_journal,
    .read = read_log,
    .poll = poll_journal,
};
