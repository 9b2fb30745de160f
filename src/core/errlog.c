/* The sandbox's stderr turned into rate-limited, prefixed and escaped log lines (errlog.h): the
 * pipe watched on the loop, a line buffer that cuts long lines, a token bucket of lines, and a
 * timer reporting drops. */
#include "errlog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "escape.h"
#include "log.h"
#include "loop.h"

static int pipe_fd = -1;
static struct loop_fd *pipe_lf;
static char line[ERRLOG_LINE_MAX];
static size_t linelen;
static bool cut; /* the line went past ERRLOG_LINE_MAX: the rest is skipped until its end */
static double tokens = ERRLOG_BURST;
static uint64_t refilled_ns;
static unsigned long dropped;
static struct loop_timer drop_timer;

static void report_drops(struct loop_timer *t)
{
	(void)t;
	if (dropped)
		log_warnx("%lu lines of the sandbox's stderr dropped (more than %d a second)",
			  dropped, ERRLOG_RATE);
	dropped = 0;
}

static bool take_token(void)
{
	uint64_t now = loop_now_ns();

	tokens += (double)(now - refilled_ns) * ERRLOG_RATE / 1e9;
	if (tokens > ERRLOG_BURST)
		tokens = ERRLOG_BURST;
	refilled_ns = now;
	if (tokens < 1)
		return false;
	tokens -= 1;
	return true;
}

static void emit_line(void)
{
	size_t shownlen;
	char *shown;

	if (linelen == 0 && !cut)
		return;
	if (!take_token()) {
		dropped++;
		drop_timer.fn = report_drops;
		if (!drop_timer.armed)
			loop_timer_arm(&drop_timer, 1000);
	} else {
		shown = esc_encode(line, linelen, &shownlen);
		log_warnx("sandbox: %s%s", shown, cut ? " [cut]" : "");
		free(shown);
	}
	linelen = 0;
	cut = false;
}

static void feed(const char *buf, size_t len)
{
	while (len > 0) {
		/* A NUL ends a line too: the escaped form cannot hold one. */
		const char *nl = memchr(buf, '\n', len);
		size_t n = nl ? (size_t)(nl - buf) : len;
		const char *nul = memchr(buf, '\0', n);
		size_t room = sizeof(line) - linelen;

		if (nul)
			n = (size_t)(nul - buf);
		if (n > room) {
			cut = true;
			memcpy(line + linelen, buf, room);
			linelen += room;
		} else if (!cut) {
			memcpy(line + linelen, buf, n);
			linelen += n;
		}
		if (n < len) {
			emit_line();
			n++;
		}
		buf += n;
		len -= n;
	}
}

/* Reads what is there, a bounded amount per wake so that a flood cannot hold the loop; false
 * at EOF or on an error. */
static bool drain(void)
{
	char buf[65536];

	for (int i = 0; i < 16; i++) {
		ssize_t n = read(pipe_fd, buf, sizeof(buf));

		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0)
			return n < 0 && errno == EINTR;
		feed(buf, (size_t)n);
	}
	return true;
}

static void on_pipe(struct loop_fd *lf, uint32_t events, void *arg)
{
	(void)lf;
	(void)events;
	(void)arg;
	if (!drain())
		errlog_detach();
}

void errlog_attach(int fd)
{
	errlog_detach();
	pipe_fd = fd;
	fcntl(fd, F_SETFL, O_NONBLOCK);
	pipe_lf = loop_add_fd(fd, EPOLLIN, on_pipe, NULL);
}

void errlog_detach(void)
{
	if (pipe_fd < 0)
		return;
	drain();
	emit_line();
	loop_del_fd(pipe_lf);
	pipe_lf = NULL;
	close(pipe_fd);
	pipe_fd = -1;
}
