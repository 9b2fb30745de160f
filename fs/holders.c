/* Finding the holders of a mount tree (see holders.h) in /proc, as root sees every process. A
 * descriptor's mount is fdinfo's mnt_id; a working or root directory, and a mapped file, are
 * opened O_PATH through their /proc links (which walks no path on the mount, so asks its daemon
 * nothing) and their descriptor's mnt_id read back. */
#include "holders.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mounttab.h"

#define NAMED_MAX 10

static bool in_tree(const struct mount_tree *t, int id)
{
	for (int i = 0; i < t->n; i++)
		if (t->ids[i] == id)
			return true;
	return false;
}

/* The mnt_id of fdinfo file name in directory dirfd, or -1. */
static int fdinfo_mnt_id(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC), id = -1;
	char buf[512];
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		char *p;

		buf[n] = '\0';
		if ((p = strstr(buf, "mnt_id:")))
			id = atoi(p + 7);
	}
	return id;
}

/* The mount of what the /proc link path points at, or -1. */
static int link_mnt_id(const char *path)
{
	int fd = open(path, O_PATH | O_CLOEXEC), id;
	char name[32];

	if (fd < 0)
		return -1;
	snprintf(name, sizeof(name), "/proc/self/fdinfo/%d", fd);
	id = fdinfo_mnt_id(AT_FDCWD, name);
	close(fd);
	return id;
}

static bool holds_by_fd(const struct mount_tree *t, pid_t pid)
{
	char path[64];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo", (int)pid);
	if (!(d = opendir(path)))
		return false;
	while (!found && (de = readdir(d)))
		found = de->d_name[0] != '.' && in_tree(t, fdinfo_mnt_id(dirfd(d), de->d_name));
	closedir(d);
	return found;
}

static bool dev_in_tree(const struct mount_tree *t, unsigned major, unsigned minor)
{
	for (int i = 0; i < t->n; i++)
		if (t->major[i] == major && t->minor[i] == minor)
			return true;
	return false;
}

/* A mapped file on the tree: maps' device first (cheap), then the mapping's own mount, since
 * a bind mount shares its device with every other mount of its filesystem. */
static bool holds_by_map(const struct mount_tree *t, pid_t pid)
{
	char path[128], *line = NULL, range[64];
	unsigned major, minor;
	size_t cap = 0;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(path, "re")))
		return false;
	while (!found && getline(&line, &cap, f) > 0) {
		if (sscanf(line, "%63s %*s %*s %x:%x", range, &major, &minor) != 3 ||
		    !dev_in_tree(t, major, minor))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/map_files/%s", (int)pid, range);
		found = in_tree(t, link_mnt_id(path));
	}
	free(line);
	fclose(f);
	return found;
}

static bool holds(const struct mount_tree *t, pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/cwd", (int)pid);
	if (in_tree(t, link_mnt_id(path)))
		return true;
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	if (in_tree(t, link_mnt_id(path)))
		return true;
	return holds_by_fd(t, pid) || holds_by_map(t, pid);
}

static void comm_of(pid_t pid, char *comm, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	snprintf(comm, len, "?");
	if ((f = fopen(path, "re"))) {
		if (fgets(comm, (int)len, f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	for (char *c = comm; *c; c++) /* a process names itself: no control bytes in our line */
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
}

/* Whether pid has /dev/fuse open. */
static bool fuse_server(pid_t pid)
{
	char dir[64], target[16];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	if (!(d = opendir(dir)))
		return false;
	while (!found && (de = readdir(d))) {
		ssize_t n = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);

		found = n == 9 && memcmp(target, "/dev/fuse", 9) == 0;
	}
	closedir(d);
	return found;
}

static bool skipped(pid_t pid, const pid_t *skip, int nskip)
{
	if (pid == getpid())
		return true;
	if (!skip)
		return fuse_server(pid);
	for (int i = 0; i < nskip; i++)
		if (skip[i] == pid)
			return true;
	return false;
}

int holders_find(const struct mount_tree *t, const pid_t *skip, int nskip, char *text,
		 size_t textlen)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	size_t used = 0;
	int n = 0;

	text[0] = '\0';
	while (d && (de = readdir(d))) {
		pid_t pid = (pid_t)strtol(de->d_name, NULL, 10);
		char comm[32];

		if (pid <= 0 || skipped(pid, skip, nskip) || !holds(t, pid))
			continue;
		if (n++ < NAMED_MAX && used < textlen) {
			comm_of(pid, comm, sizeof(comm));
			used += (size_t)snprintf(text + used, textlen - used, "%s%d (%s)",
						 n > 1 ? ", " : "", (int)pid, comm);
		}
	}
	if (d)
		closedir(d);
	if (n > NAMED_MAX && used < textlen)
		snprintf(text + used, textlen - used, " and %d more", n - NAMED_MAX);
	return n;
}

void mount_tree_add(struct mount_tree *t, int id, unsigned major, unsigned minor)
{
	if (t->n == MOUNT_TREE_MAX) {
		t->overflow = true;
		return;
	}
	t->ids[t->n] = id;
	t->major[t->n] = major;
	t->minor[t->n++] = minor;
}

struct under {
	const char *path;
	struct mount_tree tree;
};

static int add_under(const struct mount_entry *m, void *arg)
{
	struct under *u = arg;

	if (mounttab_under(m->point, u->path))
		mount_tree_add(&u->tree, m->id, m->major, m->minor);
	return 0;
}

bool holders_any(const char *mountpoint, pid_t self)
{
	struct under u = {.path = mountpoint};
	char names[256];

	if (mounttab_each(add_under, &u) < 0)
		return true;
	return u.tree.overflow || holders_find(&u.tree, &self, 1, names, sizeof(names)) > 0;
}
