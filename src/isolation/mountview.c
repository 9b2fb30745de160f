/* Which mount a mount point holds (mountview.h), read from /proc/self/mountinfo. */
#include "mountview.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A table past this is read in part: a mount point past it is not found. */
#define TABLE_MAX (1u << 20)

static char table[TABLE_MAX];

/* The fifth field of a mountinfo line (its mount point), its octal escapes undone, into out. */
static bool mount_point(const char *line, const char *end, char *out, size_t outlen)
{
	const char *p = line;
	size_t n = 0;

	for (int field = 0; field < 4; field++) {
		while (p < end && *p != ' ')
			p++;
		if (p++ >= end)
			return false;
	}
	for (; p < end && *p != ' ' && n + 1 < outlen; p++) {
		if (p[0] == '\\' && end - p > 3 && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' &&
		    p[2] <= '7' && p[3] >= '0' && p[3] <= '7') {
			out[n++] = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			p += 3;
		} else {
			out[n++] = *p;
		}
	}
	out[n] = '\0';
	return n > 0 && (p == end || *p == ' ');
}

unsigned long mountview_sbxfs_dev(const char *path)
{
	int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	unsigned long dev = 0;
	size_t len = 0;
	ssize_t n;
	char point[4096];

	if (fd < 0)
		return 0;
	while (len < sizeof(table) && (n = read(fd, table + len, sizeof(table) - len)) > 0)
		len += (size_t)n;
	close(fd);
	for (char *line = table, *eol; line < table + len; line = eol + 1) {
		unsigned major, minor;
		char *sep;

		if (!(eol = memchr(line, '\n', (size_t)(table + len - line))))
			break;
		*eol = '\0';
		sep = strstr(line, " - ");
		if (!sep || sscanf(line, "%*s %*s %u:%u", &major, &minor) != 2 ||
		    !mount_point(line, eol, point, sizeof(point)) || strcmp(point, path))
			continue;
		dev = !strncmp(sep, " - fuse.sbxfs ", 14) ? (unsigned long)major << 20 | minor : 0;
	}
	return dev;
}
