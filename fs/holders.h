/* Who holds a mount tree: the processes with a descriptor, a working or root directory, or a
 * mapped file on any of its mounts, so that `sbxfs -u` can refuse a busy mount before it changes
 * anything, and name what keeps it busy. */
#ifndef SBX_HOLDERS_H
#define SBX_HOLDERS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The mounts a tree may have: the mount, workspace/'s and the covers, and what the host nested
 * in the workspace. More is refused, never half seen. */
#define MOUNT_TREE_MAX 64

struct mount_tree {
	int ids[MOUNT_TREE_MAX]; /* the mounts' ids (mountinfo's first field) */
	unsigned major[MOUNT_TREE_MAX], minor[MOUNT_TREE_MAX];
	int n;
	bool overflow; /* it has more than MOUNT_TREE_MAX */
};

/* Writes "PID (COMM), ..." for the holders (at most ten named, then "and N more") into text,
 * skipping the pids in skip, or, when skip is NULL (a kernel that does not say which process
 * serves a FUSE connection), every process with /dev/fuse open: a FUSE daemon, the mount's own
 * among them, which holds its covers. Returns how many hold the tree. */
int holders_find(const struct mount_tree *t, const pid_t *skip, int nskip, char *text,
		 size_t textlen);
/* Adds a mount to t, or marks t overflowed. */
void mount_tree_add(struct mount_tree *t, int id, unsigned major, unsigned minor);
/* Whether a process other than self holds the mount at mountpoint or a mount on it (a tree past
 * MOUNT_TREE_MAX counts as held). */
bool holders_any(const char *mountpoint, pid_t self);

#endif
