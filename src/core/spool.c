/* Output spools: move a shell's pipe's pages into an unnamed file, track the true size and
 * mtime, and wake readers parked at the end; files of closed spools are emptied and kept for the
 * next ones. */
#include "spool.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fdres.h"
#include "log.h"
#include "xmalloc.h"

/* Whether the file's filesystem has a block left for it (root may use the reserved ones). One
 * that counts no blocks at all (tmpfs without a size, some network filesystems) is not full. */
static int has_room(int fd)
{
	struct statvfs vfs;

	if (fstatvfs(fd, &vfs) < 0)
		return -errno;
	if (vfs.f_blocks == 0)
		return 0;
	return (geteuid() == 0 ? vfs.f_bfree : vfs.f_bavail) > 0 ? 0 : -ENOSPC;
}

/* Spool files have no name: the fd is the file, so nothing is renamed, unlinked or left behind
 * by a crash. Closed spools' files are emptied and kept for the next ones: every command makes
 * three spools, and creating a file costs an inode allocation, which on a busy ext4 scans past
 * every recently deleted inode (a third of an exec's CPU); an ftruncate costs little. */
#define POOL_MAX 12

static int pool[POOL_MAX];
static unsigned pooled;
static bool pool_closed;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

/* A pooled file's fd, or -1 if there is none. */
static int pool_take(void)
{
	int fd = -1;

	pthread_mutex_lock(&pool_lock);
	if (pooled > 0)
		fd = pool[--pooled];
	pthread_mutex_unlock(&pool_lock);
	return fd;
}

/* Keeps an emptied spool file for the next spool; false if the pool has no room for it. */
static bool pool_put(struct spool *sp)
{
	bool kept = false;

	pthread_mutex_lock(&pool_lock);
	if (!pool_closed && pooled < POOL_MAX && !sp->err && ftruncate(sp->fd, 0) == 0) {
		pool[pooled++] = sp->fd;
		kept = true;
	}
	pthread_mutex_unlock(&pool_lock);
	return kept;
}

void spool_pool_clear(void)
{
	pthread_mutex_lock(&pool_lock);
	pool_closed = true;
	while (pooled > 0)
		close(pool[--pooled]);
	pthread_mutex_unlock(&pool_lock);
}

/* An unnamed file in path's directory; where O_TMPFILE is not supported, path itself, removed
 * at once. */
static int open_unnamed(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? xstrndup(path, (size_t)(slash - path + 1)) : xstrdup(".");
	int fd = fdres_open(dir, O_TMPFILE | O_RDWR, 0600);

	free(dir);
	if (fd == -EOPNOTSUPP || fd == -EISDIR || fd == -EINVAL) {
		fd = fdres_open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0)
			unlink(path);
	}
	return fd;
}

int spool_open(struct spool *sp, const char *path, off_t cap)
{
	int rc;

	memset(sp, 0, sizeof(*sp));
	sp->cap = cap;
	waitq_init(&sp->waiters);
	sp->fd = pool_take();
	if (sp->fd < 0)
		sp->fd = open_unnamed(path);
	if (sp->fd < 0)
		return sp->fd;
	sp->path = xstrdup(path);
	clock_gettime(CLOCK_REALTIME, &sp->mtime);
	if ((rc = has_room(sp->fd)) < 0)
		spool_close(sp);
	return rc;
}

void spool_empty(struct spool *sp)
{
	memset(sp, 0, sizeof(*sp));
	sp->fd = -1;
	waitq_init(&sp->waiters);
	clock_gettime(CLOCK_REALTIME, &sp->mtime);
	sp->done = true;
}

/* The file cannot take more (disk full, I/O error): say so once, and drop from now on. */
static void write_failed(struct spool *sp, int err)
{
	if (sp->err)
		return;
	sp->err = err;
	log_warnx("spool %s: %s; dropping the rest of this output", sp->path, strerror(err));
	if (!sp->truncated) {
		sp->truncated = true;
		waitq_wake(&sp->waiters);
	}
}

static void spool_grew(struct spool *sp, size_t n);

/* Copies n bytes between two files: in the kernel where it can (both on one filesystem), else
 * through a buffer. 0 or -errno. */
static int copy_bytes(int in, off_t in_off, int out, off_t out_off, size_t n)
{
	char buf[65536];

	while (n > 0) {
		loff_t from = in_off, to = out_off;
		ssize_t got = copy_file_range(in, &from, out, &to, n, 0), put;

		if (got <= 0) {
			got = pread(in, buf, n < sizeof(buf) ? n : sizeof(buf), in_off);
			if (got <= 0)
				return got < 0 ? -errno : -EIO;
			if ((put = pwrite(out, buf, (size_t)got, out_off)) != got)
				return put < 0 ? -errno : -ENOSPC;
		}
		in_off += got;
		out_off += got;
		n -= (size_t)got;
	}
	return 0;
}

/* The mirror stops reading its one feeder's file: it copies what it holds into its own. */
static int unalias(struct spool *m)
{
	int rc = copy_bytes(m->alias->fd, 0, m->fd, 0, (size_t)m->size);

	if (rc < 0) { /* what it holds stays readable from the feeder's file */
		write_failed(m, -rc);
		return rc;
	}
	m->alias = NULL;
	return 0;
}

/* Gives the mirror what the file got at off, so it has the bytes of every spool that feeds it in
 * the order they arrived; past the mirror's cap they are dropped. While one spool alone feeds it,
 * the mirror is its file's first bytes and copies nothing (a copy of each byte costs a fifth of
 * the stream's throughput); the other's first byte has it copy them into its own file. */
static void copy_to_mirror(struct spool *sp, off_t off, size_t n)
{
	struct spool *m = sp->mirror;
	int rc;

	if (m->fd < 0 || m->err || m->dropped)
		return;
	if ((off_t)n > m->cap - m->size) {
		n = m->size < m->cap ? (size_t)(m->cap - m->size) : 0;
		if (!m->truncated) {
			m->truncated = true;
			waitq_wake(&m->waiters);
		}
	}
	if (!m->alias && m->size == 0 && off == 0)
		m->alias = sp;
	if (m->alias == sp && off == m->size) {
		if (n > 0)
			spool_grew(m, n);
		return;
	}
	if (m->alias && unalias(m) < 0)
		return;
	if ((rc = copy_bytes(sp->fd, off, m->fd, m->size, n)) < 0)
		write_failed(m, -rc);
	else if (n > 0)
		spool_grew(m, n);
}

static void spool_grew(struct spool *sp, size_t n)
{
	if (sp->mirror)
		copy_to_mirror(sp, sp->size, n);
	if (sp->set)
		spool_budget_charge(n);
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

/* Spool bytes one byte here takes: its mirror's copy too, while the mirror keeps bytes. */
static unsigned cost_per_byte(const struct spool *sp)
{
	const struct spool *m = sp->mirror;

	return m && m->fd >= 0 && !m->err && !m->dropped && m->size < m->cap ? 2 : 1;
}

/* Bytes go from the command's pipe to a staging pipe of ours (pages moved, not copied), then
 * into the file. A splice straight into the file held the command's pipe locked while the
 * file took the pages, and the command, writing meanwhile, spun on that lock (a stream ran at
 * 0.45 of a pipe's speed). Core lock held, so one staging pipe serves every spool. */
#define STAGE_SIZE (1u << 20)
static int stage[2] = {-1, -1}; /* kept for the daemon's life */

static int stage_open(void)
{
	if (stage[0] >= 0)
		return 0;
	if (pipe2(stage, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	fcntl(stage[1], F_SETPIPE_SZ, STAGE_SIZE);
	return 0;
}

/* For a filesystem without splice: one buffer's worth from the staging pipe, written at off.
 * Returns the bytes written, or -errno of the write. */
static ssize_t stage_copy(struct spool *sp, size_t len, off_t off)
{
	char buf[65536];
	ssize_t n = read(stage[0], buf, len < sizeof(buf) ? len : sizeof(buf)), w;

	if (n <= 0)
		return -EIO; /* cannot be: it holds len bytes */
	if ((w = pwrite(sp->fd, buf, (size_t)n, off)) != n)
		return w < 0 ? -errno : -ENOSPC;
	return n;
}

/* Moves the n bytes the staging pipe holds to the end of the file. Returns 0, or -errno of the
 * write (what is left in the pipe is then dropped); *kept says how many got in. */
static int stage_flush(struct spool *sp, size_t n, size_t *kept)
{
	char drain[4096];

	for (*kept = 0; *kept < n;) {
		loff_t off = sp->size + (off_t)*kept;
		ssize_t w = splice(stage[0], NULL, sp->fd, &off, n - *kept, SPLICE_F_MOVE);

		if (w < 0)
			w = errno == EINVAL ? stage_copy(sp, n - *kept, (off_t)off) : -errno;
		if (w <= 0) {
			while (read(stage[0], drain, sizeof(drain)) > 0)
				;
			return w < 0 ? (int)w : -ENOSPC;
		}
		*kept += (size_t)w;
	}
	return 0;
}

/* What cannot be spliced (a pty): read through a buffer, then written at the end. */
static ssize_t fill_copy(struct spool *sp, int fd, size_t max)
{
	char buf[65536];
	ssize_t n = read(fd, buf, max < sizeof(buf) ? max : sizeof(buf)), w;

	if (n < 0)
		return -errno;
	if (n > 0 && (w = pwrite(sp->fd, buf, (size_t)n, sp->size)) != n) {
		write_failed(sp, w < 0 ? errno : ENOSPC);
		return n; /* read, and dropped */
	}
	if (n > 0)
		spool_grew(sp, (size_t)n);
	return n;
}

ssize_t spool_fill(struct spool *sp, int pipefd, size_t max)
{
	size_t room, kept;
	ssize_t n;
	int rc;

	if (sp->size >= sp->cap || sp->err || sp->dropped)
		return drop(sp, pipefd, max);
	if ((off_t)max > sp->cap - sp->size)
		max = (size_t)(sp->cap - sp->size);
	room = spool_budget_room(sp->set, max, cost_per_byte(sp));
	if (room == 0)
		return drop(sp, pipefd, max);
	max = room < STAGE_SIZE ? room : STAGE_SIZE;
	if ((rc = stage_open()) < 0)
		return fill_copy(sp, pipefd, max);
	n = splice(pipefd, NULL, stage[1], NULL, max, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
	if (n < 0 && errno == EINVAL)
		return fill_copy(sp, pipefd, max);
	if (n <= 0)
		return n < 0 ? -errno : 0;
	rc = stage_flush(sp, (size_t)n, &kept);
	if (kept > 0)
		spool_grew(sp, kept);
	if (rc < 0)
		write_failed(sp, -rc); /* the rest was read, and dropped */
	return n;
}

static void append_bytes(struct spool *sp, const void *buf, size_t len)
{
	ssize_t w;

	if (sp->fd < 0 || sp->err || sp->dropped)
		return;
	if ((w = pwrite(sp->fd, buf, len, sp->size)) != (ssize_t)len) {
		write_failed(sp, w < 0 ? errno : ENOSPC);
		return;
	}
	spool_grew(sp, len);
}

void spool_append(struct spool *sp, const void *buf, size_t len)
{
	size_t room;

	if (sp->fd < 0 || sp->err || sp->dropped)
		return;
	room = spool_budget_room(sp->set, len, cost_per_byte(sp));
	if (room < len && !sp->truncated) {
		sp->truncated = true;
		waitq_wake(&sp->waiters);
	}
	if (room)
		append_bytes(sp, buf, room);
}

int spool_read_fd(const struct spool *sp)
{
	return sp->alias ? sp->alias->fd : sp->fd;
}

void spool_finish(struct spool *sp)
{
	sp->done = true;
	waitq_wake(&sp->waiters);
}

off_t spool_drop(struct spool *sp)
{
	off_t held = sp->size;

	if (sp->fd >= 0 && ftruncate(sp->fd, 0) < 0)
		log_warn("spool %s: emptying it", sp->path);
	sp->size = 0;
	sp->dropped = sp->truncated = true;
	clock_gettime(CLOCK_REALTIME, &sp->mtime);
	waitq_wake(&sp->waiters);
	return held;
}

void spool_close(struct spool *sp)
{
	if (sp->fd >= 0 && !pool_put(sp))
		close(sp->fd);
	free(sp->path);
	sp->fd = -1;
	sp->path = NULL;
}
