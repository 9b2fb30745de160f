/* The host's mount table as the sandbox needs it (mountview.h): the launcher's own view, pruned
 * in a child after fork (plain system calls into a static buffer: no stdio, no malloc), and which
 * mount a mount point holds, for the watchdog. */
#include "mountview.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#define TABLE_MAX (1u << 20)

static char table[TABLE_MAX];

int mountview_own(void)
{
	if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return -errno;
	return 0;
}

/* Whether path is dir or below it. */
static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/');
}

static bool kept(const char *point, const char *stage)
{
	static const char *const exact[] = {"/", "/dev", "/proc", "/run"};

	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (!strcmp(point, exact[i]))
			return true;
	return under(point, "/usr") || under(point, stage);
}

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

int mountview_prune(const char *stage)
{
	int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	ssize_t n;
	char point[4096];

	if (fd < 0)
		return -errno;
	while (len < sizeof(table) && (n = read(fd, table + len, sizeof(table) - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (len == sizeof(table))
		return -EFBIG; /* a table past 1 MiB: not seen whole, so not pruned */
	for (char *line = table, *eol; line < table + len; line = eol + 1) {
		if (!(eol = memchr(line, '\n', (size_t)(table + len - line))))
			break;
		/* A mount below one detached before is gone with it: EINVAL or ENOENT then. */
		if (mount_point(line, eol, point, sizeof(point)) && !kept(point, stage))
			umount2(point, MNT_DETACH);
	}
	return 0;
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
