/* Fuzz target: the tar reader of imports (src/snapshot/tarread.c), which reads archives from
 * outside. The input's first byte picks the size of the pieces the rest is fed in. Properties:
 * every entry handed on is a file, directory, symlink or hard link; its path is relative, with
 * no "", "." or ".." name, and empty only for a directory; a symlink's target, walked by a
 * checker written apart from the reader, never climbs above the tree; a hard link names such a
 * path; a file gets exactly its size in data and one done; the limits hold; and the outcome and
 * every entry are the same whatever the pieces (fed whole once more to compare). */
#include <errno.h>
#include <stdbool.h>

#include "fuzz.h"
#include "tarfmt.h"
#include "tarread.h"

#define LIMIT_ENTRIES 64
#define LIMIT_BYTES   (1u << 20)

struct record {
	unsigned entries, dones;
	uint64_t bytes, want; /* data of the open file, and its size */
	bool open;
	uint64_t digest; /* of every entry's fields, in order */
};

static void mix(struct record *r, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		r->digest = (r->digest ^ b[i]) * 0x100000001b3ull;
}

/* Each name of a relative path is a real name. */
static bool clean_path(const char *p, bool may_be_empty)
{
	if (!*p)
		return may_be_empty;
	if (*p == '/')
		return false;
	for (const char *q = p; *q;) {
		size_t n = strcspn(q, "/");

		if (n == 0 || (n == 1 && q[0] == '.') || (n == 2 && q[0] == '.' && q[1] == '.'))
			return false;
		q += n + (q[n] == '/');
		if (q[-1] == '/' && !*q)
			return false;
	}
	return true;
}

/* The oracle for links: the link's directory as a stack of names, then the target's. */
static bool stays_inside(const char *path, const char *target)
{
	long depth = 0;

	if (*target == '/' || !*target)
		return false;
	for (const char *p = path; *p; p++)
		if (*p == '/')
			depth++;
	while (*target) {
		size_t n = strcspn(target, "/");

		if (n == 2 && target[0] == '.' && target[1] == '.')
			depth--;
		else if (n && !(n == 1 && target[0] == '.'))
			depth++;
		if (depth < 0)
			return false;
		target += n;
		if (*target)
			target++;
	}
	return true;
}

static int on_entry(void *arg, const struct tar_entry *e)
{
	struct record *r = arg;

	FUZZ_ASSERT(!r->open);
	FUZZ_ASSERT(e->type == TAR_REG || e->type == TAR_DIR || e->type == TAR_SYMLINK ||
		    e->type == TAR_LINK);
	FUZZ_ASSERT(clean_path(e->path, e->type == TAR_DIR));
	FUZZ_ASSERT((e->mode & ~07777u) == 0);
	if (e->type == TAR_SYMLINK)
		FUZZ_ASSERT(stays_inside(e->path, e->link));
	if (e->type == TAR_LINK)
		FUZZ_ASSERT(clean_path(e->link, false));
	if (e->type != TAR_REG)
		FUZZ_ASSERT(e->size == 0);
	for (size_t i = 0; i < e->nxattrs; i++)
		FUZZ_ASSERT(!strncmp(e->xattrs[i].name, "user.", 5));
	r->entries++;
	FUZZ_ASSERT(r->entries <= LIMIT_ENTRIES);
	r->open = e->type == TAR_REG;
	r->bytes = 0;
	r->want = e->size;
	mix(r, &e->type, 1);
	mix(r, e->path, strlen(e->path) + 1);
	if (e->link)
		mix(r, e->link, strlen(e->link) + 1);
	mix(r, &e->size, sizeof(e->size));
	mix(r, &e->mtime.tv_sec, sizeof(e->mtime.tv_sec));
	return 0;
}

static int on_data(void *arg, const char *buf, size_t len)
{
	struct record *r = arg;

	FUZZ_ASSERT(r->open);
	r->bytes += len;
	FUZZ_ASSERT(r->bytes <= r->want);
	mix(r, buf, len);
	return 0;
}

static int on_done(void *arg)
{
	struct record *r = arg;

	FUZZ_ASSERT(r->open && r->bytes == r->want);
	r->open = false;
	r->dones++;
	return 0;
}

static const struct tar_sink sink = {on_entry, on_data, on_done};

/* Feeds data in pieces of step bytes (0: whole): the reader's outcome. */
static int run(const uint8_t *data, size_t size, size_t step, struct record *r)
{
	const struct tar_limits lim = {LIMIT_ENTRIES, LIMIT_BYTES};
	struct tar_reader *tr = tarr_new(&lim, &sink, r);
	int rc = 0;

	for (size_t off = 0; rc == 0 && off < size; off += step ? step : size)
		rc = tarr_feed(tr, (const char *)data + off,
			       step && size - off > step ? step : size - off);
	if (rc == 0)
		rc = tarr_end(tr);
	tarr_free(tr);
	FUZZ_ASSERT(rc == 0 || rc == -EINVAL || rc == -EFBIG || rc == -ENOSPC);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct record a = {0}, b = {0};
	size_t step;
	int ra, rb;

	if (size < 1)
		return 0;
	step = 1 + data[0] % 97 * 7;
	ra = run(data + 1, size - 1, step, &a);
	rb = run(data + 1, size - 1, 0, &b);
	FUZZ_ASSERT(ra == rb);
	FUZZ_ASSERT(a.entries == b.entries && a.dones == b.dones && a.digest == b.digest);
	if (ra == 0)
		FUZZ_ASSERT(!a.open);
	return 0;
}
