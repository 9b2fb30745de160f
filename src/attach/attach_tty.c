/* sbxfs attach: the user's own terminal: raw mode and its undoing, its size, drawing a
 * replayed screen, and putting back the modes a program on the sandbox terminal may have set. */
#include "attach.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

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
	if (tcsetattr(fd, TCSADRAIN, &raw) < 0)
		return -errno;
	return 0;
}

int attach_tty_restore(int fd, const struct termios *saved)
{
	/* TCSADRAIN, not TCSAFLUSH: keys typed meanwhile stay for the user's shell. */
	while (tcsetattr(fd, TCSADRAIN, saved) < 0) {
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
 * cursor in the last column, where the next "\r\n" could wrap once more. */
static int draw_line(int fd, const char *line, size_t len)
{
	while (len > 0 && line[len - 1] == ' ')
		len--;
	return write_all(fd, line, len);
}

int attach_tty_draw_screen(int fd, const char *text, size_t len, unsigned row, unsigned col)
{
	const char *end = text + len, *p = text;
	char cursor[32];
	int rc;

	if ((rc = write_str(fd, "\033[H\033[2J")) < 0)
		return rc;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *stop = nl ? nl : end;

		if ((rc = draw_line(fd, p, (size_t)(stop - p))) < 0)
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
	/* Those a full-screen program sets and a shell does not expect: the alternate screen,
	 * a hidden cursor, application keys, mouse reports, bracketed paste, colours, and a
	 * scroll region (reset between saving and restoring the cursor, as it homes it). */
	return write_str(fd, "\033[?1049l\033[?25h\033[?1l\033>\033[?1000l\033[?1002l"
			     "\033[?1003l\033[?1006l\033[?2004l\033[0m\0337\033[r\0338");
}
