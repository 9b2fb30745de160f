/* Taking a snapshot (the worker's): a first pass copies the workspace while the sandbox runs
 * (reflinks where the filesystem makes them); then, with every process of the sandbox frozen,
 * a second pass makes the copy equal to the workspace of that instant, copying again only what
 * changed since the first began (a file's ctime says so) or a process has mapped writable. So
 * the snapshot is the workspace at one instant of the sandbox's, and the sandbox stands still
 * only as long as a walk of its names and a copy of what changed take. */
#include <errno.h>
#include <sys/syscall.h>
#include <linux/openat2.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "inomap.h"
#include "log.h"
#include "snapshot_priv.h"
#include "treesync.h"

/* The files a process of the sandbox has mapped shared and writable: its stores reach the file
 * without a system call, so its ctime may not move with them. */
static void scan_mmaps(struct inomap *dirty)
{
	pid_t *pids;
	size_t n = cgroup_tree_pids(cgroup_sandbox(), &pids);
	char path[64], *line = NULL;
	size_t cap = 0;

	for (size_t i = 0; i < n; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/maps", (int)pids[i]);
		if (!(f = fopen(path, "re")))
			continue;
		while (getline(&line, &cap, f) > 0) {
			unsigned maj, min;
			unsigned long long ino;
			char perms[8];

			if (sscanf(line, "%*x-%*x %7s %*x %x:%x %llu", perms, &maj, &min, &ino) ==
				4 &&
			    perms[1] == 'w' && perms[3] == 's' && ino)
				inomap_put(dirty, makedev(maj, min), ino);
		}
		fclose(f);
	}
	free(line);
	free(pids);
}

/* Whether reflinks are likely: the snapshot on the workspace's own XFS or btrfs. Then a
 * snapshot costs no space when made, and the space check before the copy is skipped. */
static bool reflinks_likely(int ws, int tree)
{
	struct stat a, b;
	struct statfs fs;

	return fstat(ws, &a) == 0 && fstat(tree, &b) == 0 && a.st_dev == b.st_dev &&
	       fstatfs(tree, &fs) == 0 &&
	       (fs.f_type == XFS_SUPER_MAGIC || fs.f_type == BTRFS_SUPER_MAGIC);
}

static void set_phase(struct snapshot *s, const char *phase, struct tree_stats *progress)
{
	pthread_mutex_lock(&snap_lock);
	s->phase = phase;
	s->progress = progress;
	pthread_mutex_unlock(&snap_lock);
}

/* The space the snapshot may take: what space_max leaves. */
static uint64_t space_left(void)
{
	uint64_t used, max = snap_cfg->snap_space_max;

	if (!max)
		return UINT64_MAX;
	pthread_mutex_lock(&snap_lock);
	used = snap_space_used_locked();
	pthread_mutex_unlock(&snap_lock);
	return used < max ? max - used : 0;
}

/* The entries the snapshot may hold, in *left: what files_max leaves (0 for no bound, as
 * tree_sync takes it). -ENOSPC when it leaves none. */
static int files_left(uint64_t *left)
{
	uint64_t used, max = snap_cfg->snap_files_max;

	*left = 0;
	if (!max)
		return 0;
	pthread_mutex_lock(&snap_lock);
	used = snap_files_used_locked();
	pthread_mutex_unlock(&snap_lock);
	if (used >= max)
		return -ENOSPC;
	*left = max - used;
	return 0;
}

/* The frozen pass: 0 or -errno; *frozen whether the sandbox was frozen for it. */
static int catch_up(struct snapshot *s, int ws, int tree, struct tree_sync *ts, struct snap_meta *m)
{
	int frc = cgroup_freeze(cgroup_sandbox(), true), rc;
	uint64_t t0 = snap_now_ms();
	struct inomap dirty;

	if (frc == -ETIMEDOUT)
		return -EBUSY;
	if (frc < 0 && frc != -EOPNOTSUPP)
		return frc;
	m->frozen = frc == 0;
	clock_gettime(CLOCK_REALTIME, &m->time);
	inomap_init(&dirty);
	if (m->frozen)
		scan_mmaps(&dirty);
	ts->trust = TRUST_SRC;
	ts->dirty = &dirty;
	__atomic_store_n(&ts->st.files, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ts->st.bytes, 0, __ATOMIC_RELAXED);
	set_phase(s, m->frozen ? "catching-up (frozen)" : "catching-up", &ts->st);
	rc = tree_sync(ws, tree, ts);
	if (m->frozen)
		cgroup_freeze(cgroup_sandbox(), false);
	m->frozen_ms = snap_now_ms() - t0;
	inomap_clear(&dirty);
	return rc;
}

static int take(struct snapshot *s, int ws, const char *root, int dir, int tree)
{
	struct tree_sync ts = {.clone = true, .strip_setid = true, .cancel = snap_work_cancel()};
	struct inomap young;
	uint64_t t0 = snap_now_ms(), bytes, entries;
	struct snap_meta m = {0};
	bool likely = reflinks_likely(ws, tree);
	struct stat wst;
	int rc;

	/* A copy is measured first: whether it fits, and the totals its progress shows. Reflinks
	 * take no space and a walk's time: that walk would double it (they take inodes all the
	 * same: the sync itself stops at files_max). */
	ts.copy_max = space_left();
	if ((rc = files_left(&ts.files_max)) < 0) {
		log_info("snapshot %s: the snapshots hold files_max entries already", s->name);
		return rc;
	}
	if (!likely) {
		set_phase(s, "measuring", NULL);
		if ((rc = tree_measure(ws, &bytes, &entries, ts.cancel)) < 0)
			return rc;
		pthread_mutex_lock(&snap_lock);
		s->total_files = entries;
		s->total_bytes = bytes;
		pthread_mutex_unlock(&snap_lock);
		if (bytes > ts.copy_max || (ts.files_max && entries > ts.files_max)) {
			log_info("snapshot %s: %" PRIu64 " bytes and %" PRIu64
				 " entries do not fit in "
				 "what space_max and files_max leave",
				 s->name, bytes, entries);
			return -ENOSPC;
		}
	}
	inomap_init(&young);
	ts.young = &young;
	clock_gettime(CLOCK_REALTIME, &ts.trust_before);
	set_phase(s, "copying", &ts.st);
	rc = tree_sync(ws, tree, &ts);
	if (rc == 0)
		rc = catch_up(s, ws, tree, &ts, &m);
	inomap_clear(&young);
	if (rc < 0)
		return rc;
	if (fstat(ws, &wst) < 0)
		return -errno;
	snprintf(m.root, sizeof(m.root), "%s", root);
	m.files = ts.st.files;
	m.bytes = ts.st.bytes;
	m.space = ts.st.copied;
	m.ws_dev = wst.st_dev;
	m.ws_ino = wst.st_ino;
	m.reflinked = ts.clone && m.bytes > 0;
	m.took_ms = snap_now_ms() - t0;
	if (ts.st.special)
		log_info("snapshot %s: %" PRIu64 " sockets, FIFOs or devices left out", s->name,
			 ts.st.special);
	if (ts.st.xattr_lost)
		log_warnx("snapshot %s: the snapshots' filesystem refused the extended attributes "
			  "of %" PRIu64 " files",
			  s->name, ts.st.xattr_lost);
	if ((rc = snap_meta_write(dir, &m)) < 0)
		return rc;
	pthread_mutex_lock(&snap_lock);
	s->meta = m;
	s->progress = NULL;
	pthread_mutex_unlock(&snap_lock);
	return 0;
}

/* The workspace's directory root ("": the workspace), beneath it and through no link or mount:
 * an fd or -errno. */
static int open_root(const char *root)
{
	struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
	int ws = open(snap_workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;

	if (ws < 0 || !root[0])
		return ws < 0 ? -errno : ws;
	fd = (int)syscall(SYS_openat2, ws, root, &how, sizeof(how));
	if (fd < 0)
		fd = -errno;
	close(ws);
	return fd;
}

int snap_take_run(struct snapshot *s, const char *root)
{
	int ws = open_root(root), dir = -1, tree = -1;
	char tmp[32];
	int rc = ws < 0 ? ws : 0;

	snap_tmp_name(s, tmp, sizeof(tmp));
	if (rc == 0 &&
	    (mkdirat(snap_dir_fd, tmp, 0700) < 0 ||
	     (dir = openat(snap_dir_fd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) <
		 0 ||
	     mkdirat(dir, "tree", 0700) < 0 ||
	     (tree = openat(dir, "tree", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0))
		rc = -errno;
	if (rc == 0)
		rc = take(s, ws, root, dir, tree);
	if (ws >= 0)
		close(ws);
	if (dir >= 0)
		close(dir);
	if (tree >= 0)
		close(tree);
	if (rc == 0)
		rc = snap_publish(s, tmp);
	if (rc < 0 && rc != -ECANCELED && rc != -ENOSPC)
		log_warnx("snapshot %s: %s", s->name, strerror(-rc));
	return rc;
}
