/* Reading /proc/self/mountinfo (see mounttab.h). A line is
 *   ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS
 * with spaces, tabs, newlines and backslashes in paths written as octal escapes. */
#include "mounttab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Undoes mountinfo's octal escapes (\040 for a space, \011, \012, \134) in place. */
static void unescape(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/* Splits one line into m (pointing into line). false for a line of another shape. */
static bool parse(char *line, struct mount_entry *m)
{
	char *field[6], *save = NULL, *sep = strstr(line, " - "), *fstype;

	if (!sep)
		return false;
	*sep = '\0';
	fstype = strtok_r(sep + 3, " \n", &save);
	save = NULL;
	for (int i = 0; i < 6; i++)
		if (!(field[i] = strtok_r(i ? NULL : line, " \n", &save)))
			return false;
	if (!fstype || sscanf(field[2], "%u:%u", &m->major, &m->minor) != 2)
		return false;
	m->id = atoi(field[0]);
	m->parent = atoi(field[1]);
	unescape(field[4]);
	m->point = field[4];
	m->opts = field[5];
	m->fstype = fstype;
	return true;
}

int mounttab_each(int (*fn)(const struct mount_entry *m, void *arg), void *arg)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int rc = 0;

	if (!f)
		return -errno;
	while (rc == 0 && getline(&line, &cap, f) > 0) {
		struct mount_entry m;

		if (parse(line, &m))
			rc = fn(&m, arg);
	}
	free(line);
	fclose(f);
	return rc;
}

bool mounttab_under(const char *point, const char *path)
{
	size_t n = strlen(path);

	if (strncmp(point, path, n) != 0)
		return false;
	return point[n] == '\0' || point[n] == '/' || (n == 1 && path[0] == '/');
}

bool mounttab_has_opt(const char *opts, const char *opt)
{
	size_t n = strlen(opt);

	for (const char *p = opts; p;) {
		if (strncmp(p, opt, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return true;
		if ((p = strchr(p, ',')))
			p++;
	}
	return false;
}

#define MAX_STACK 16 /* mounts on one path the top is looked for among */

struct top_search {
	const char *path;
	struct mount_top stack[MAX_STACK];
	int parents[MAX_STACK];
	int n;
};

static int note_at_path(const struct mount_entry *m, void *arg)
{
	struct top_search *t = arg;

	if (strcmp(m->point, t->path) != 0 || t->n == MAX_STACK)
		return 0;
	t->stack[t->n] = (struct mount_top){.found = true, .id = m->id};
	snprintf(t->stack[t->n].fstype, sizeof(t->stack[t->n].fstype), "%s", m->fstype);
	t->stack[t->n].nosymfollow = mounttab_has_opt(m->opts, "nosymfollow");
	t->parents[t->n++] = m->parent;
	return 0;
}

/* The top of a stack of mounts on one path is the one no other there is mounted on. */
int mounttab_top(const char *path, struct mount_top *top)
{
	struct top_search *t = calloc(1, sizeof(*t));
	int rc;

	*top = (struct mount_top){0};
	if (!t)
		return -ENOMEM;
	t->path = path;
	rc = mounttab_each(note_at_path, t);
	for (int i = 0; i < t->n; i++) {
		bool under = false;

		for (int j = 0; j < t->n && !under; j++)
			under = t->parents[j] == t->stack[i].id;
		if (!under)
			*top = t->stack[i];
	}
	free(t);
	return rc;
}
