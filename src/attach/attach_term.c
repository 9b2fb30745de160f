/* sbxfs attach: the sandbox terminal's side: the shape of its path, and its files status,
 * screen, size, cmd and exit, as any program would use them. */
#include "attach.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xmalloc.h"

/* The path resolved, or with its parent resolved when the terminal does not exist yet. */
static char *resolve(const char *path)
{
	char *trimmed, *dir, *base, *abs, *res = realpath(path, NULL);
	size_t len;

	if (res)
		return res;
	trimmed = xstrdup(path);
	len = strlen(trimmed);
	while (len > 1 && trimmed[len - 1] == '/')
		trimmed[--len] = '\0';
	dir = xstrdup(trimmed);
	base = basename(trimmed); /* points into trimmed */
	if ((abs = realpath(dirname(dir), NULL))) {
		res = xasprintf("%s/%s", strcmp(abs, "/") == 0 ? "" : abs, base);
		free(abs);
		free(trimmed);
	} else {
		res = trimmed; /* judged as written: opening it will say what is missing */
	}
	free(dir);
	return res;
}

/* The component before *end in path (start..end), moving *end to its start. */
static const char *prev_component(const char *path, const char **end, size_t *len)
{
	const char *e = *end, *s;

	if (e <= path || e[-1] != '/')
		return NULL;
	e--;
	s = e;
	while (s > path && s[-1] != '/')
		s--;
	*len = (size_t)(e - s);
	*end = s;
	return s;
}

static bool component_is(const char *c, size_t len, const char *want)
{
	return c && len == strlen(want) && memcmp(c, want, len) == 0;
}

int attach_term_path_check(const char *path)
{
	char *abs = resolve(path);
	const char *end = strrchr(abs, '/'), *c;
	size_t len;
	int rc = -EINVAL;

	if (end && *++end && strcmp(end, ".") && strcmp(end, "..")) {
		c = prev_component(abs, &end, &len);
		if (component_is(c, len, "terms") && prev_component(abs, &end, &len) && len > 0 &&
		    (c = prev_component(abs, &end, &len)) && component_is(c, len, "sessions"))
			rc = 0;
	}
	free(abs);
	return rc;
}

int attach_term_open_dir(const char *path)
{
	int fd;

	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int attach_term_read(int dir, const char *name, char **buf, size_t *len)
{
	int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
	size_t cap = 4096, n = 0;
	char *b;

	if (fd < 0)
		return -errno;
	b = xmalloc(cap + 1);
	for (;;) {
		ssize_t r = read(fd, b + n, cap - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int rc = -errno;

			free(b);
			close(fd);
			return rc;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == cap)
			b = xrealloc(b, (cap *= 2) + 1);
	}
	close(fd);
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

/* The value of the line "key VALUE" of a status text, or NULL. */
static const char *status_value(const char *text, const char *key)
{
	size_t klen = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		if (strncmp(l, key, klen) == 0 && l[klen] == ' ')
			return l + klen + 1;
	}
	return NULL;
}

static int parse_status(const char *text, struct attach_term_status *st)
{
	const char *state = status_value(text, "state");
	const char *row = status_value(text, "cursor_row");
	const char *col = status_value(text, "cursor_col");
	const char *out = status_value(text, "bytes_out");

	if (!state || !row || !col || !out)
		return -EPROTO;
	st->started = strncmp(state, "idle\n", 5) != 0;
	if (sscanf(row, "%u", &st->cursor_row) != 1 || sscanf(col, "%u", &st->cursor_col) != 1 ||
	    sscanf(out, "%llu", &st->bytes_out) != 1)
		return -EPROTO;
	return 0;
}

int attach_term_read_status(int dir, struct attach_term_status *st)
{
	size_t len;
	char *text;
	int rc = attach_term_read(dir, "status", &text, &len);

	if (rc < 0)
		return rc;
	rc = parse_status(text, st);
	free(text);
	return rc;
}

static int write_file(int dir, const char *name, const char *text)
{
	int fd = openat(dir, name, O_WRONLY | O_CLOEXEC);
	int rc;

	if (fd < 0)
		return -errno;
	rc = write_all(fd, text, strlen(text));
	/* Control files act at close, and their errors come from it. */
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

int attach_term_set_size(int dir, unsigned rows, unsigned cols)
{
	char line[32];

	snprintf(line, sizeof(line), "%u %u\n", rows, cols);
	return write_file(dir, "size", line);
}

int attach_term_start(int dir)
{
	/* The first input starts the session's shell; Ctrl-L, as its first key, makes it draw
	 * its prompt on the cleared screen. */
	return write_file(dir, "in", "\f");
}

int attach_term_exit_status(int dir, int *status)
{
	size_t len;
	char *text;
	int rc = attach_term_read(dir, "exit", &text, &len);

	if (rc < 0)
		return rc;
	if (sscanf(text, "%d", status) != 1)
		rc = -EPROTO;
	free(text);
	return rc;
}
