/* sbxfs attach: the user's own terminal: raw mode and its undoing, its size, drawing a
 * replayed screen, putting back the modes a program on the sandbox terminal may have set, and
 * dropping what the terminal still sends in once the attach ends. */
#include "attach.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "xmalloc.h"

int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_str(int fd, const char *s)
{
	return write_all(fd, s, strlen(s));
}

int attach_tty_raw(int fd, struct termios *saved)
{
	struct termios raw;

	if (tcgetattr(fd, saved) < 0)
		return -errno;
	raw = *saved;
	cfmakeraw(&raw);
	/* TCSADRAIN, not TCSAFLUSH: keys typed ahead are for the sandbox, and nothing it printed
	 * has reached this terminal yet, so nothing pending answers it. */
	if (tcsetattr(fd, TCSADRAIN, &raw) < 0)
		return -errno;
	return 0;
}

int attach_tty_restore(int fd, const struct termios *saved)
{
	/* TCSAFLUSH: what came in since attach_tty_drain was meant for the sandbox terminal or
	 * is a late report, not a command for the user's shell. */
	while (tcsetattr(fd, TCSAFLUSH, saved) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

int attach_tty_size(int fd, unsigned *rows, unsigned *cols)
{
	struct winsize ws;

	if (ioctl(fd, TIOCGWINSZ, &ws) < 0)
		return -errno;
	if (ws.ws_row == 0 || ws.ws_col == 0)
		return -EINVAL;
	*rows = ws.ws_row;
	*cols = ws.ws_col;
	return 0;
}

/* One line of the screen without its trailing blanks: a full-width line would leave the
 * cursor in the last column, where the next "\r\n" could wrap once more. The sandbox wrote
 * it, so it goes through the filter as out does, one of its own per line: nothing of one line
 * can swallow the "\r\n" or the cursor position drawn after it. */
static int draw_line(int fd, const char *line, size_t len, bool utf8)
{
	struct attach_filter filter;
	char *shown;
	int rc;

	while (len > 0 && line[len - 1] == ' ')
		len--;
	shown = xmalloc(ATTACH_FILTER_OUT_MAX(len));
	attach_filter_init(&filter, utf8);
	rc = write_all(fd, shown, attach_filter_run(&filter, line, len, shown));
	free(shown);
	return rc;
}

int attach_tty_draw_screen(int fd, const char *text, size_t len, unsigned row, unsigned col,
			   bool utf8)
{
	const char *end = text + len, *p = text;
	char cursor[32];
	int rc;

	if ((rc = write_str(fd, "\033[H\033[2J")) < 0)
		return rc;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *stop = nl ? nl : end;

		if ((rc = draw_line(fd, p, (size_t)(stop - p), utf8)) < 0)
			return rc;
		p = nl ? nl + 1 : end;
		if (p < end && (rc = write_str(fd, "\r\n")) < 0)
			return rc;
	}
	snprintf(cursor, sizeof(cursor), "\033[%u;%uH", row + 1, col + 1);
	return write_str(fd, cursor);
}

int attach_tty_reset_modes(int fd)
{
	/* Every mode the filter lets a program set, as a shell expects it: the alternate
	 * screen, a hidden cursor, application keys, mouse and focus reports, bracketed paste,
	 * synchronized output, autowrap, insert mode, the cursor's shape, line drawing, colours
	 * and the scroll region (reset between saving and restoring the cursor, as it homes
	 * it). */
	return write_str(fd, "\033[?1049l\033[?25h\033[?1l\033>\033[?1000l\033[?1002l"
			     "\033[?1003l\033[?1006l\033[?1004l\033[?2004l\033[?2026l\033[?7h"
			     "\033[4l\033[0 q\033(B\033[0m\0337\033[r\0338");
}

/* Nothing more in for DRAIN_QUIET_MS, or DRAIN_MAX_MS in all. */
#define DRAIN_QUIET_MS 50
#define DRAIN_MAX_MS   500

static long elapsed_ms(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - since->tv_sec) * 1000 + (now.tv_nsec - since->tv_nsec) / 1000000;
}

int attach_tty_drain(int in, int out)
{
	struct pollfd p = {.fd = in, .events = POLLIN};
	struct timespec start;
	char junk[4096];

	/* The reset reaches the terminal first: mouse or focus reports it sent before reading
	 * it are then on their way in, and read here. */
	if (tcdrain(out) < 0 && errno != ENOTTY)
		return -errno;
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (elapsed_ms(&start) < DRAIN_MAX_MS) {
		int n = poll(&p, 1, DRAIN_QUIET_MS);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0 || read(in, junk, sizeof(junk)) <= 0) /* quiet, or the tty is gone */
			return 0;
	}
	return 0;
}
