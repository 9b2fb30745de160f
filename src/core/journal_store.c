/* The journal's files (journal_priv.h): segments named by the offset of their first byte
 * (16 hex digits, ".jsonl"), appended to the newest, the oldest removed once there are
 * JSTORE_SEGS, so the whole stays under the bound. At open it picks up the newest segment's
 * end and its last line's sequence number; a line a crash cut short is cut off. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal_priv.h"
#include "xmalloc.h"

#define JSTORE_SEGS 8
#define TAIL_SCAN   (64u << 10)

struct seg {
	uint64_t start, size;
	int fd;
};

static int dirfd_ = -1;
static struct seg segs[JSTORE_SEGS + 1];
static int nsegs;
static uint64_t seg_max;

static void seg_name(uint64_t start, char *buf, size_t len)
{
	snprintf(buf, len, "%016" PRIx64 ".jsonl", start);
}

static bool parse_name(const char *name, uint64_t *start)
{
	char *end;

	if (strlen(name) != 22 || strcmp(name + 16, ".jsonl"))
		return false;
	for (int i = 0; i < 16; i++)
		if (!strchr("0123456789abcdef", name[i]))
			return false;
	*start = strtoull(name, &end, 16);
	return end == name + 16;
}

static int cmp_seg(const void *a, const void *b)
{
	const struct seg *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static void drop_oldest(void)
{
	char name[32];

	seg_name(segs[0].start, name, sizeof(name));
	close(segs[0].fd);
	unlinkat(dirfd_, name, 0);
	memmove(segs, segs + 1, sizeof(segs[0]) * (size_t)--nsegs);
}

static int open_seg(uint64_t start, bool create, struct seg *s)
{
	char name[32];
	struct stat st;
	int fd;

	seg_name(start, name, sizeof(name));
	fd = openat(dirfd_, name,
		    O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT | O_EXCL : 0),
		    0600);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	s->start = start;
	s->size = (uint64_t)st.st_size;
	s->fd = fd;
	return 0;
}

/* The segments in the directory, oldest first (at most JSTORE_SEGS: older ones go). */
static int list_segs(void)
{
	int fd = dup(dirfd_);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	uint64_t start;
	struct seg all[64];
	int n = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((e = readdir(d)) && n < (int)(sizeof(all) / sizeof(all[0])))
		if (parse_name(e->d_name, &start) && open_seg(start, false, &all[n]) == 0)
			n++;
	closedir(d);
	qsort(all, (size_t)n, sizeof(all[0]), cmp_seg);
	for (int i = 0; i < n; i++) {
		segs[nsegs++] = all[i];
		if (nsegs > JSTORE_SEGS)
			drop_oldest();
	}
	return 0;
}

/* Cuts a last line without its newline (a crash mid-write) and returns the sequence number of
 * the last whole line (0: none). */
static uint64_t recover_tail(struct seg *s)
{
	size_t len = s->size < TAIL_SCAN ? (size_t)s->size : TAIL_SCAN;
	char *buf = xmalloc(len + 1), *nl, *line;
	unsigned long long seq = 0;
	ssize_t got = pread(s->fd, buf, len, (off_t)(s->size - len));

	if (got != (ssize_t)len) {
		free(buf);
		return 0;
	}
	buf[len] = '\0';
	nl = memrchr(buf, '\n', len);
	if (!nl) {
		free(buf);
		return 0;
	}
	if (nl != buf + len - 1 &&
	    ftruncate(s->fd, (off_t)(s->size - len + (size_t)(nl - buf) + 1)) == 0)
		s->size -= len - (size_t)(nl - buf) - 1;
	*nl = '\0';
	line = memrchr(buf, '\n', (size_t)(nl - buf));
	line = line ? line + 1 : buf;
	if (sscanf(line, "{\"v\":%*d,\"seq\":%llu", &seq) != 1)
		seq = 0;
	free(buf);
	return seq;
}

int jstore_open(const char *dir, uint64_t max, uint64_t *last_seq, char *err, size_t errlen)
{
	int rc;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot make %s: %s", dir, strerror(errno));
		return -errno;
	}
	dirfd_ = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dirfd_ < 0) {
		snprintf(err, errlen, "cannot open %s: %s", dir, strerror(errno));
		return -errno;
	}
	seg_max = max / JSTORE_SEGS;
	nsegs = 0;
	*last_seq = 0;
	rc = list_segs();
	for (int i = nsegs - 1; i >= 0 && !*last_seq && rc == 0; i--)
		*last_seq = recover_tail(&segs[i]);
	if (rc == 0 && nsegs == 0 && (rc = open_seg(0, true, &segs[0])) == 0)
		nsegs = 1;
	if (rc < 0) {
		snprintf(err, errlen, "cannot read the journal in %s: %s", dir, strerror(-rc));
		jstore_close();
	}
	return rc;
}

void jstore_close(void)
{
	for (int i = 0; i < nsegs; i++)
		close(segs[i].fd);
	nsegs = 0;
	if (dirfd_ >= 0)
		close(dirfd_);
	dirfd_ = -1;
}

uint64_t jstore_end(void)
{
	return nsegs ? segs[nsegs - 1].start + segs[nsegs - 1].size : 0;
}

int jstore_append(const char *line, size_t len)
{
	struct seg *cur = &segs[nsegs - 1];
	ssize_t n;

	if (cur->size > 0 && cur->size + len > seg_max) {
		struct seg next;
		int rc = open_seg(jstore_end(), true, &next);

		if (rc < 0)
			return rc;
		segs[nsegs++] = next;
		if (nsegs > JSTORE_SEGS)
			drop_oldest();
		cur = &segs[nsegs - 1];
	}
	n = write(cur->fd, line, len);
	if (n < 0)
		return -errno;
	if ((size_t)n < len) {
		/* a part is no line: take it back */
		if (ftruncate(cur->fd, (off_t)cur->size) < 0)
			cur->size += (size_t)n;
		return -ENOSPC;
	}
	cur->size += len;
	return 0;
}

void jstore_read(uint64_t *off, char *buf, size_t size, size_t *n)
{
	*n = 0;
	if (!nsegs)
		return;
	if (*off < segs[0].start)
		*off = segs[0].start;
	for (int i = 0; i < nsegs && *n < size; i++) {
		struct seg *s = &segs[i];
		uint64_t at = *off + *n;
		ssize_t got;

		if (at < s->start || at >= s->start + s->size)
			continue;
		got = pread(s->fd, buf + *n, size - *n, (off_t)(at - s->start));
		if (got <= 0)
			break;
		*n += (size_t)got;
	}
}
