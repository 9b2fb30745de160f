/* Local sources of a checkout (see gitlocal.h). */
#include "gitlocal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "escape.h"
#include "xmalloc.h"

/* %XX as libgit2 decodes it: a malformed escape stays as it is. */
static char *percent_decode(const char *s)
{
	char *out = xmalloc(strlen(s) + 1), *o = out;

	for (; *s; s++) {
		if (s[0] == '%' && esc_hexval(s[1]) >= 0 && esc_hexval(s[2]) >= 0) {
			*o++ = (char)(esc_hexval(s[1]) * 16 + esc_hexval(s[2]));
			s += 2;
		} else
			*o++ = *s;
	}
	*o = '\0';
	return out;
}

char *gitlocal_path(const char *url)
{
	if (!strncmp(url, "file://", 7)) {
		const char *p = url + 7;

		if (!strncmp(p, "localhost/", 10))
			p += 9;
		return p[0] == '/' ? percent_decode(p) : NULL;
	}
	/* libgit2 takes anything else with a colon for a URL or an scp-like ssh path */
	if (strchr(url, ':'))
		return NULL;
	return xstrdup(url);
}

/* path with % as %25: the rest libgit2 decodes as it is. */
static char *percent_encode(const char *path)
{
	char *out = xmalloc(3 * strlen(path) + 1), *o = out;

	for (; *path; path++) {
		if (*path == '%') {
			memcpy(o, "%25", 3);
			o += 3;
		} else
			*o++ = *path;
	}
	*o = '\0';
	return out;
}

char *gitlocal_rebase(const char *url, const char *inside, const char *host)
{
	char *path = gitlocal_path(url), *moved, *out;
	size_t n = strlen(inside);

	while (n > 1 && inside[n - 1] == '/')
		n--;
	if (!path || strncmp(path, inside, n) || (path[n] != '/' && path[n] != '\0')) {
		free(path);
		return xstrdup(url);
	}
	moved = xasprintf("%s%s", host, path + n);
	free(path);
	if (strncmp(url, "file://", 7))
		return moved;
	path = percent_encode(moved);
	out = xasprintf("file://%s", path);
	free(path);
	free(moved);
	return out;
}

/* Whether dir is one of roots: the same directory, by any path (a bind mount of the workspace
 * is the workspace). */
static int is_root(const char *dir, char *const *roots)
{
	struct stat d, r;

	if (stat(dir, &d) < 0)
		return 0;
	for (size_t i = 0; roots[i]; i++)
		if (stat(roots[i], &r) == 0 && r.st_dev == d.st_dev && r.st_ino == d.st_ino)
			return 1;
	return 0;
}

/* The real path of path or of its deepest existing ancestor. */
static char *real_or_ancestor(const char *path)
{
	char *copy = xstrdup(path), *real;

	while (!(real = realpath(copy, NULL))) {
		char *slash = strrchr(copy, '/');

		if (!slash || slash == copy) {
			free(copy);
			return realpath("/", NULL);
		}
		*slash = '\0';
	}
	free(copy);
	return real;
}

int gitlocal_check(const char *path, char *const *roots)
{
	char cwd[PATH_MAX], *abs, *real;
	int rc = -EACCES;

	if (path[0] == '/')
		abs = xstrdup(path);
	else if (getcwd(cwd, sizeof(cwd)))
		abs = xasprintf("%s/%s", cwd, path);
	else
		return -errno;
	real = real_or_ancestor(abs);
	/* real has no symlink left: its ancestors, by name, are the directories it is in */
	while (real && rc < 0) {
		char *slash = strrchr(real, '/');

		if (is_root(real[0] ? real : "/", roots))
			rc = 0;
		else if (!slash)
			break;
		else
			*slash = '\0';
	}
	free(real);
	free(abs);
	return rc;
}
