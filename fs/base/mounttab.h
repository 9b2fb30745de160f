/* This process's mount table (/proc/self/mountinfo) as records: what is mounted where, with
 * which options, read each time it is asked so that it says what is mounted now. */
#ifndef SBX_MOUNTTAB_H
#define SBX_MOUNTTAB_H

#include <stdbool.h>

struct mount_entry {
	int id, parent;
	unsigned major, minor;
	const char *point;  /* unescaped */
	const char *opts;   /* the mount's own options: rw,nosuid,nodev,nosymfollow,... */
	const char *fstype; /* fuse.sbxfs, ext4, ... */
};

/* Calls fn for each mount in the table's order (a mount over another comes after it) until fn
 * returns nonzero. Returns fn's last answer, or -errno if the table cannot be read. */
int mounttab_each(int (*fn)(const struct mount_entry *m, void *arg), void *arg);
/* Whether path is the mount point or lies below it. */
bool mounttab_under(const char *point, const char *path);
/* Whether the comma-separated options have opt. */
bool mounttab_has_opt(const char *opts, const char *opt);

/* The topmost mount at path: what describes it. */
struct mount_top {
	bool found;
	int id;
	char fstype[64];
	bool nosymfollow;
};
int mounttab_top(const char *path, struct mount_top *top);

#endif
