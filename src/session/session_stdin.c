/* A session's stdin file: a feed (feed.h) whose pipe each command opens through the launcher's
 * holder (/proc/PID/fd/N), so each command gets its own pipe and its own EOF. A command started
 * with nothing staged and no writer reads /dev/null. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "identity.h"
#include "session_priv.h"
#include "xmalloc.h"

static void on_held(struct hold *h, int fdnum, pid_t holder_pid)
{
	struct session_stdin *in = container_of(h, struct session_stdin, hold);
	struct session *s = container_of(in, struct session, in);
	char path[64];
	int pipe_w = in->pending_w;

	in->holding = false;
	in->pending_w = -1;
	if (fdnum < 0) {
		/* Running it on /dev/null would silently lose what was written to stdin. */
		close(pipe_w);
		exec_unrun(s, 0, "the launcher could not take the command's stdin pipe");
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)holder_pid, fdnum);
	exec_send_run(s, path);
	feed_attach(&in->feed, pipe_w);
}

bool session_stdin_wanted(struct session *s)
{
	return feed_wanted(&s->in.feed);
}

void session_stdin_begin(struct session *s)
{
	struct session_stdin *in = &s->in;
	int p[2], rc;

	if ((rc = identity_pipe(p, session_owner)) < 0) {
		exec_unrun(s, -rc, "cannot make the command's stdin pipe");
		return;
	}
	/* Bytes go in only once the command can open the pipe: until then they stay staged. */
	in->pending_w = p[1];
	in->holding = true;
	in->hold.on_held = on_held;
	launch_hold(&in->hold, p[0]);
}

void session_stdin_end(struct session *s)
{
	struct session_stdin *in = &s->in;

	launch_drop(&in->hold);
	in->holding = false;
	if (in->pending_w >= 0)
		close(in->pending_w);
	in->pending_w = -1;
	feed_detach(&in->feed);
}

int session_stdin_open(struct session *s)
{
	int rc = 0;

	core_lock();
	if (s->removed)
		rc = -ENOENT;
	else
		feed_writer_open(&s->in.feed);
	core_unlock();
	return rc;
}

void session_stdin_close(struct session *s)
{
	core_lock();
	feed_writer_close(&s->in.feed);
	core_unlock();
}

ssize_t session_stdin_write(struct session *s, const char *buf, size_t len, struct waiter *w)
{
	ssize_t n;

	core_lock();
	n = s->removed ? -ENOENT : feed_write(&s->in.feed, buf, len, w);
	core_unlock();
	return n;
}
