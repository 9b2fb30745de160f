/* Feeds (see feed.h): the staging buffer, non-blocking delivery into the reader's pipe, and
 * the EOF rule. */
#include "feed.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "fdres.h"
#include "log.h"
#include "xmalloc.h"

/* Staged bytes beyond this make writers wait (the pipe is the rest of the buffer). */
#define FEED_MAX (1u << 20)

void feed_init(struct feed *f)
{
	memset(f, 0, sizeof(*f));
	f->pipe_w = -1;
	waitq_init(&f->space);
}

void feed_detach(struct feed *f)
{
	if (f->pipe_lf) {
		loop_del_fd(f->pipe_lf);
		f->pipe_lf = NULL;
	}
	if (f->pipe_w >= 0)
		close(f->pipe_w);
	f->pipe_w = -1;
	f->tty = false;
}

void feed_free(struct feed *f)
{
	feed_detach(f);
	free(f->buf);
	f->buf = NULL;
	f->len = f->cap = 0;
	waitq_wake(&f->space);
}

bool feed_wanted(const struct feed *f)
{
	return f->len > 0 || f->writers > 0;
}

static void on_pipe_writable(struct loop_fd *lf, uint32_t events, void *arg);

/* A canonical-mode reader sees EOF at a ^D that starts a line; after a partial line, the first
 * ^D only hands that line over. Best effort: a full pty input buffer drops it. */
static void type_eof(struct feed *f)
{
	static const char eofs[2] = {'\x04', '\x04'};
	bool partial = f->last && f->last != '\n';

	if (write(f->pipe_w, eofs, partial ? 2 : 1) < 0)
		log_warn("stdin of a pty: typing EOF");
}

/* Moves staged bytes into the pipe; gives EOF when all is delivered and nobody writes. */
static void flush(struct feed *f)
{
	while (f->pipe_w >= 0 && f->len > 0) {
		ssize_t n = write(f->pipe_w, f->buf, f->len);

		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) {
			/* The reader closed its stdin: what it did not read is dropped. */
			f->len = 0;
			feed_detach(f);
			break;
		}
		if (n > 0)
			f->last = f->buf[n - 1];
		memmove(f->buf, f->buf + n, f->len - (size_t)n);
		f->len -= (size_t)n;
	}
	if (f->len < FEED_MAX)
		waitq_wake(&f->space);
	if (f->pipe_w < 0)
		return;
	if (f->len == 0 && f->writers == 0) {
		if (f->tty)
			type_eof(f);
		feed_detach(f);
		return;
	}
	if (f->len > 0 && !f->pipe_lf) {
		f->pipe_lf = loop_add_fd(f->pipe_w, EPOLLOUT, on_pipe_writable, f);
	} else if (f->len == 0 && f->pipe_lf) {
		loop_del_fd(f->pipe_lf);
		f->pipe_lf = NULL;
	}
}

static void on_pipe_writable(struct loop_fd *lf, uint32_t events, void *arg)
{
	(void)lf;
	(void)events;
	flush(arg);
}

void feed_attach(struct feed *f, int pipe_w)
{
	feed_detach(f);
	fcntl(pipe_w, F_SETFL, O_NONBLOCK);
	f->pipe_w = pipe_w;
	flush(f);
}

void feed_attach_tty(struct feed *f, int master)
{
	feed_detach(f);
	fcntl(master, F_SETFL, O_NONBLOCK);
	f->pipe_w = master;
	f->tty = true;
	f->last = 0;
	flush(f);
}

void feed_writer_open(struct feed *f)
{
	f->writers++;
}

void feed_writer_close(struct feed *f)
{
	f->writers--;
	flush(f);
}

ssize_t feed_write(struct feed *f, const char *buf, size_t len, struct waiter *w)
{
	size_t room = f->len < FEED_MAX ? FEED_MAX - f->len : 0, n;

	if (room == 0) {
		if (w)
			waitq_add(&f->space, w);
		return -EAGAIN;
	}
	n = len < room ? len : room;
	if (f->len + n > f->cap) {
		f->cap = (f->len + n) * 2;
		f->buf = xrealloc(f->buf, f->cap);
	}
	memcpy(f->buf + f->len, buf, n);
	f->len += n;
	flush(f);
	return (ssize_t)n;
}

void feed_wake(struct feed *f)
{
	waitq_wake(&f->space);
}
