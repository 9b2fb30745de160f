/* What blocks the restore of one directory of the workspace: the sandbox's processes that hold
 * something under it (an open file, their cwd or root, a mapping), found in /proc as the
 * sandbox names paths (/workspace/DIR, or the backing directory's path under isolation none).
 * Only those are waited for or, with force, stopped; a server elsewhere keeps running. Their
 * names (a command's, a file's) are the sandbox's: shown %HH-escaped. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "escape.h"
#include "snapshot_priv.h"
#include "xmalloc.h"

/* Whether path is prefix or below it. */
static bool under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	return !strncmp(path, prefix, n) && (path[n] == '\0' || path[n] == '/');
}

/* The link at /proc/PID/NAME points under one of the prefixes: its target into what. */
static bool link_under(const char *link, char *const prefixes[2], char *what, size_t whatlen)
{
	char target[PATH_MAX];
	ssize_t n = readlink(link, target, sizeof(target) - 1);

	if (n < 0)
		return false;
	target[n] = '\0';
	if (!under(target, prefixes[0]) && !under(target, prefixes[1]))
		return false;
	snprintf(what, whatlen, "%s", target);
	return true;
}

/* Whether the entries of /proc/PID/DIR (fd, map_files) hold something under the prefixes. */
static bool dir_under(pid_t pid, const char *dir, char *const prefixes[2], char *what,
		      size_t whatlen)
{
	char path[64], link[64 + NAME_MAX + 2];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, dir);
	if (!(d = opendir(path)))
		return false;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", path, de->d_name);
		found = link_under(link, prefixes, what, whatlen);
	}
	closedir(d);
	return found;
}

/* What pid holds under the prefixes ("cwd /workspace/app"), or false. */
static bool holds(pid_t pid, char *const prefixes[2], char *what, size_t whatlen)
{
	static const char *const links[] = {"cwd", "root"};
	char link[64];

	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		snprintf(link, sizeof(link), "/proc/%d/%s", (int)pid, links[i]);
		if (link_under(link, prefixes, what, whatlen))
			return true;
	}
	return dir_under(pid, "fd", prefixes, what, whatlen) ||
	       dir_under(pid, "map_files", prefixes, what, whatlen);
}

static void comm_of(pid_t pid, char *comm, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	comm[0] = '\0';
	if ((f = fopen(path, "re"))) {
		if (fgets(comm, (int)len, f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
}

size_t snap_blockers(const char *dir, bool stop, char *why, size_t whylen)
{
	char *prefixes[2] = {xasprintf("/workspace/%s", dir),
			     xasprintf("%s/%s", snap_workspace, dir)};
	pid_t *pids;
	size_t n = cgroup_tree_pids(cgroup_sandbox(), &pids), found = 0;
	size_t used = 0;

	why[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		char what[PATH_MAX], comm[32];

		if (!holds(pids[i], prefixes, what, sizeof(what)))
			continue;
		if (stop)
			kill(pids[i], SIGKILL);
		comm_of(pids[i], comm, sizeof(comm));
		if (found++ < 3 && used < whylen) {
			/* Names from the sandbox: one escaped field each, no line of their own. */
			char *c = esc_percent(comm, false), *w = esc_percent(what, false);

			used += (size_t)snprintf(why + used, whylen - used, "%s%d (%s) holds %s",
						 used ? ", " : "", (int)pids[i], c, w);
			free(c);
			free(w);
		}
	}
	if (found > 3 && used < whylen)
		snprintf(why + used, whylen - used, ", and %zu more", found - 3);
	free(pids);
	free(prefixes[0]);
	free(prefixes[1]);
	return found;
}
