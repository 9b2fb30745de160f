/* A session's stdin file: bytes written to it are staged here, then fed into a pipe that the
 * running command opens through the launcher (/proc/PID/fd/N), so each command gets its own
 * pipe and its own EOF: once everything written is delivered and no writer holds the file open.
 * A command started with nothing staged and no writer reads /dev/null. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/fsuid.h>
#include <unistd.h>

#include "identity.h"
#include "log.h"
#include "session_priv.h"
#include "xmalloc.h"

/* Staged bytes beyond this make writers wait (the pipe is the rest of the buffer). */
#define STDIN_MAX (1u << 20)

void stdin_init(struct session_stdin *in)
{
	memset(in, 0, sizeof(*in));
	in->pipe_w = -1;
	waitq_init(&in->space);
}

static void close_pipe(struct session_stdin *in)
{
	if (in->pipe_lf) {
		loop_del_fd(in->pipe_lf);
		in->pipe_lf = NULL;
	}
	if (in->pipe_w >= 0)
		close(in->pipe_w);
	in->pipe_w = -1;
}

void stdin_free(struct session_stdin *in)
{
	close_pipe(in);
	free(in->buf);
	in->buf = NULL;
	in->len = in->cap = 0;
	waitq_wake(&in->space);
}

static void on_pipe_writable(struct loop_fd *lf, uint32_t events, void *arg);

/* Moves staged bytes into the pipe; gives EOF when all is delivered and nobody writes. */
static void flush(struct session_stdin *in)
{
	while (in->pipe_w >= 0 && in->len > 0) {
		ssize_t n = write(in->pipe_w, in->buf, in->len);

		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) {
			/* The command closed its stdin: what it did not read is dropped. */
			in->len = 0;
			close_pipe(in);
			break;
		}
		memmove(in->buf, in->buf + n, in->len - (size_t)n);
		in->len -= (size_t)n;
	}
	if (in->len < STDIN_MAX)
		waitq_wake(&in->space);
	if (in->pipe_w < 0)
		return;
	if (in->len == 0 && in->writers == 0) {
		close_pipe(in);
		return;
	}
	if (in->len > 0 && !in->pipe_lf)
		in->pipe_lf = loop_add_fd(in->pipe_w, EPOLLOUT, on_pipe_writable, in);
	else if (in->len == 0 && in->pipe_lf) {
		loop_del_fd(in->pipe_lf);
		in->pipe_lf = NULL;
	}
}

static void on_pipe_writable(struct loop_fd *lf, uint32_t events, void *arg)
{
	(void)lf;
	(void)events;
	flush(arg);
}

static void on_held(struct hold *h, int fdnum, pid_t launcher_pid)
{
	struct session_stdin *in = container_of(h, struct session_stdin, hold);
	struct session *s = container_of(in, struct session, in);
	char path[64];

	in->holding = false;
	if (fdnum < 0) {
		log_warnx("session %s: the launcher could not hold stdin", s->id);
		close_pipe(in);
		exec_send_run(s, NULL);
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)launcher_pid, fdnum);
	exec_send_run(s, path);
	flush(in);
}

/* A pipe belongs to whoever made it, and the sandbox's user must be able to open it through
 * /proc: make it as that user (fsuid is per thread). */
static int make_pipe(int p[2])
{
	int rc;

	if (!session_owner)
		return pipe2(p, O_CLOEXEC);
	setfsgid(session_owner->gid);
	setfsuid(session_owner->uid);
	rc = pipe2(p, O_CLOEXEC);
	setfsuid(0);
	setfsgid(0);
	return rc;
}

void stdin_begin(struct session *s)
{
	struct session_stdin *in = &s->in;
	int p[2];

	if (in->len == 0 && in->writers == 0) {
		exec_send_run(s, NULL);
		return;
	}
	if (make_pipe(p) < 0) {
		log_warn("session %s: stdin pipe", s->id);
		exec_send_run(s, NULL);
		return;
	}
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	in->pipe_w = p[1];
	in->holding = true;
	in->hold.on_held = on_held;
	launch_hold(&in->hold, p[0]);
}

void stdin_end(struct session *s)
{
	struct session_stdin *in = &s->in;

	launch_drop(&in->hold);
	in->holding = false;
	close_pipe(in);
}

int session_stdin_open(struct session *s)
{
	int rc = 0;

	core_lock();
	if (s->removed)
		rc = -ENOENT;
	else
		s->in.writers++;
	core_unlock();
	return rc;
}

void session_stdin_close(struct session *s)
{
	core_lock();
	s->in.writers--;
	flush(&s->in);
	core_unlock();
}

ssize_t session_stdin_write(struct session *s, const char *buf, size_t len, struct waiter *w)
{
	struct session_stdin *in = &s->in;
	size_t room, n;

	core_lock();
	if (s->removed) {
		core_unlock();
		return -ENOENT;
	}
	room = in->len < STDIN_MAX ? STDIN_MAX - in->len : 0;
	if (room == 0) {
		if (w)
			waitq_add(&in->space, w);
		core_unlock();
		return -EAGAIN;
	}
	n = len < room ? len : room;
	if (in->len + n > in->cap) {
		in->cap = (in->len + n) * 2;
		in->buf = xrealloc(in->buf, in->cap);
	}
	memcpy(in->buf + in->len, buf, n);
	in->len += n;
	if (!in->holding)
		flush(in);
	core_unlock();
	return (ssize_t)n;
}
