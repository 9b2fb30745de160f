/* Output spools: splice from a shell's pipe into a file, track the true size and mtime, and wake
 * readers parked at the end. */
#include "spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "xmalloc.h"

int spool_open(struct spool *sp, const char *path, off_t cap)
{
	memset(sp, 0, sizeof(*sp));
	sp->cap = cap;
	waitq_init(&sp->waiters);
	sp->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (sp->fd < 0)
		return -errno;
	sp->path = xstrdup(path);
	clock_gettime(CLOCK_REALTIME, &sp->mtime);
	return 0;
}

static void spool_grew(struct spool *sp, size_t n)
{
	sp->size += (off_t)n;
	clock_gettime(CLOCK_REALTIME, &sp->mtime);
	waitq_wake(&sp->waiters);
}

static ssize_t drop(struct spool *sp, int pipefd, size_t max)
{
	char buf[65536];
	ssize_t n = read(pipefd, buf, max < sizeof(buf) ? max : sizeof(buf));

	if (n < 0)
		return -errno;
	if (n > 0 && !sp->truncated) {
		sp->truncated = true;
		waitq_wake(&sp->waiters);
	}
	return n;
}

ssize_t spool_fill(struct spool *sp, int pipefd, size_t max)
{
	loff_t off = sp->size;
	ssize_t n;

	if (sp->size >= sp->cap)
		return drop(sp, pipefd, max);
	if ((off_t)max > sp->cap - sp->size)
		max = (size_t)(sp->cap - sp->size);

	n = splice(pipefd, NULL, sp->fd, &off, max, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
	if (n < 0 && errno == EINVAL) {
		/* Spool on a filesystem without splice: copy through a buffer. */
		char buf[65536];

		n = read(pipefd, buf, max < sizeof(buf) ? max : sizeof(buf));
		if (n > 0 && pwrite(sp->fd, buf, (size_t)n, sp->size) != n) {
			log_warn("spool %s", sp->path);
			return -EIO;
		}
	}
	if (n < 0)
		return -errno;
	if (n > 0)
		spool_grew(sp, (size_t)n);
	return n;
}

void spool_append(struct spool *sp, const void *buf, size_t len)
{
	if (pwrite(sp->fd, buf, len, sp->size) != (ssize_t)len) {
		log_warn("spool %s", sp->path);
		return;
	}
	spool_grew(sp, len);
}

void spool_finish(struct spool *sp)
{
	sp->done = true;
	waitq_wake(&sp->waiters);
}

void spool_close(struct spool *sp)
{
	if (sp->fd >= 0)
		close(sp->fd);
	if (sp->path)
		unlink(sp->path);
	free(sp->path);
	sp->fd = -1;
	sp->path = NULL;
}
