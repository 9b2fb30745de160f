/* Restoring a snapshot into the workspace (the worker's), and the ctl lines that ask for it.
 * The workspace's directory stays what it is (its mount, the sandbox's bind of it): its
 * contents are made equal to the snapshot's, files that differ replaced by new ones renamed over
 * them, files unchanged since the snapshot left as they are. Nothing may run in the sandbox
 * meanwhile for a whole restore; for one directory, nothing that holds something under it
 * (snapblock.c): a restore finds that so (else EBUSY, and status says what blocked it) or, with
 * force, ends it first, and keeps the sandbox frozen while it works, so a command started
 * meanwhile waits for it. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "busy.h"
#include "cgroup.h"
#include "log.h"
#include "snapshot_priv.h"
#include "treesync.h"
#include "xmalloc.h"

/* How long a forced restore waits for what it ended to be gone (the shells' reports, the
 * kills' grace), and how often it looks. */
#define SETTLE_MS      3000
#define SETTLE_STEP_MS 20

#define WS_PREFIX "/workspace"

char *snapshot_dir_normalize(const char *p)
{
	char *out = xmalloc(strlen(p) + 1), *o = out;

	if (p[0] == '/') {
		if (strncmp(p, WS_PREFIX, strlen(WS_PREFIX)) ||
		    (p[strlen(WS_PREFIX)] && p[strlen(WS_PREFIX)] != '/')) {
			free(out);
			return NULL;
		}
		p += strlen(WS_PREFIX);
	}
	while (*p) {
		size_t n = strcspn(p, "/");

		if ((n == 2 && !strncmp(p, "..", 2))) {
			free(out);
			return NULL;
		}
		if (n && !(n == 1 && p[0] == '.')) {
			if (o != out)
				*o++ = '/';
			memcpy(o, p, n);
			o += n;
		}
		p += n + (p[n] == '/');
	}
	*o = '\0';
	return out;
}

int snap_restore_parse(const char *line, size_t len, bool *force, char **dir)
{
	char *text, *p, *word;
	int rc = 0;

	*force = false;
	*dir = NULL;
	if (len && line[len - 1] == '\n')
		len--;
	if (memchr(line, '\0', len) || memchr(line, '\n', len))
		return -EINVAL;
	p = text = xstrndup(line, len);
	word = strsep(&p, " ");
	if (strcmp(word, "restore"))
		rc = -EINVAL;
	if (rc == 0 && p && (!strcmp(p, "force") || !strncmp(p, "force ", 6))) {
		*force = true;
		p = p[5] ? p + 6 : NULL;
	}
	if (rc == 0 && p && p[0] && !(*dir = snapshot_dir_normalize(p)))
		rc = -EINVAL;
	free(text);
	return rc;
}

int snapshot_ctl(struct snapshot *s, const char *line, size_t len, struct ticket **done)
{
	char *arg = xstrndup(line, len), *dir;
	bool force;
	int rc = snap_restore_parse(line, len, &force, &dir);

	free(dir);
	pthread_mutex_lock(&snap_lock);
	if (rc == 0 && (s->removed || s->state != SS_READY))
		rc = s->removed ? -ENOENT : -EBUSY;
	if (rc == 0) {
		s->state = SS_RESTORING;
		s->phase = "queued";
		clock_gettime(CLOCK_REALTIME, &s->started);
		s->done = ticket_new();
		*done = s->done;
		ticket_ref(*done);
		snap_work_queue(JOB_RESTORE, s, arg);
	}
	pthread_mutex_unlock(&snap_lock);
	free(arg);
	return rc;
}

int snapshot_ctl_check(struct snapshot *s, const char *line, size_t len)
{
	bool force;
	char *dir;
	int rc = snap_restore_parse(line, len, &force, &dir);
	bool whole = !dir && !(s && s->meta.root[0]);

	/* A whole restore is told at the write: the close would find it busy too (unless it ended
	 * meanwhile). A directory's is told at the close, with what holds it in status. */
	if (rc == 0 && !force && whole && sandbox_busy(false))
		rc = -EBUSY;
	free(dir);
	return rc;
}

/* Whether what the restore of dir must not race runs ("": the whole workspace: anything);
 * stop: it is killed. What it is, in s->restore_busy. */
static bool busy_for(struct snapshot *s, const char *dir, bool stop)
{
	char why[sizeof(s->restore_busy)];
	bool busy;

	/* Without cgroups the sandbox's processes cannot be told from the host's: the whole rule.
	 */
	if (dir[0] && cgroup_sandbox()) {
		busy = snap_blockers(dir, stop, why, sizeof(why)) > 0;
	} else {
		busy = sandbox_busy(stop);
		snprintf(why, sizeof(why), "a command, process, terminal or cell runs");
	}
	pthread_mutex_lock(&snap_lock);
	snprintf(s->restore_busy, sizeof(s->restore_busy), "%s", busy ? why : "");
	pthread_mutex_unlock(&snap_lock);
	return busy;
}

/* Nothing the restore of dir would race, and the sandbox frozen (or so, without a freezer): 0,
 * *frozen; -EBUSY when that is not so (force: not even after its kills). */
static int quiesce(struct snapshot *s, const char *dir, bool force, bool *frozen)
{
	const struct timespec step = {0, SETTLE_STEP_MS * 1000000L};

	for (uint64_t end = snap_now_ms() + SETTLE_MS;; nanosleep(&step, NULL)) {
		int frc;

		if (force) {
			pthread_mutex_lock(&snap_lock);
			s->phase = "stopping";
			pthread_mutex_unlock(&snap_lock);
			busy_for(s, dir, true);
		}
		frc = cgroup_freeze(cgroup_sandbox(), true);
		if (frc < 0 && frc != -EOPNOTSUPP)
			return frc == -ETIMEDOUT ? -EBUSY : frc;
		*frozen = frc == 0;
		/* Frozen, nothing can start: what runs now is what the restore would race. */
		if (!busy_for(s, dir, false))
			return 0;
		if (*frozen)
			cgroup_freeze(cgroup_sandbox(), false);
		if (!force || snap_now_ms() >= end) {
			log_warnx("snapshot %s: restore refused, busy: %s", s->name,
				  s->restore_busy);
			return -EBUSY;
		}
	}
}

/* The workspace's directory dir (made, owned by the sandbox's user, where missing), one name
 * at a time and never through a symlink: an fd or -errno. */
static int open_ws_dir(int ws, const char *dir)
{
	char *copy = xstrdup(dir), *p = copy, *name;
	int fd = dup(ws);

	while (fd >= 0 && (name = strsep(&p, "/")) && name[0]) {
		int next;

		if (mkdirat(fd, name, 0755) == 0 &&
		    fchownat(fd, name, snap_owner_uid, snap_owner_gid, AT_SYMLINK_NOFOLLOW) < 0) {
			close(fd);
			fd = -1;
			break;
		}
		next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = next;
	}
	free(copy);
	return fd < 0 ? -errno : fd;
}

/* The snapshot's directory dir, beneath its tree without following a link. */
static int open_snap_dir(int tree, const char *dir)
{
	struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
	int fd = (int)syscall(SYS_openat2, tree, dir[0] ? dir : ".", &how, sizeof(how));

	return fd < 0 ? -errno : fd;
}

/* Whether the workspace's directory root is the one snapshot s was taken of. */
static bool same_root(struct snapshot *s, int ws)
{
	const struct snap_meta *m = &s->meta;
	int fd = m->root[0] ? open_snap_dir(ws, m->root) : dup(ws);
	struct stat st;
	bool same = fd >= 0 && fstat(fd, &st) == 0 && m->ws_ino && st.st_dev == m->ws_dev &&
		    st.st_ino == m->ws_ino;

	if (fd >= 0)
		close(fd);
	return same;
}

/* The workspace's dir from the snapshot's path in its tree: dir less the root it was taken of
 * (a directory's snapshot holds that directory alone: EINVAL for a dir outside it). */
static int restore_into(struct snapshot *s, int ws, const char *dir)
{
	struct tree_sync ts = {.clone = true, .copy_max = UINT64_MAX, .cancel = snap_work_cancel()};
	const struct snap_meta *m = &s->meta;
	size_t rlen = strlen(m->root);
	int src, dst;
	int rc;

	if (rlen && strncmp(dir, m->root, rlen) != 0)
		return -EINVAL;
	if (rlen && dir[rlen] != '\0' && dir[rlen] != '/')
		return -EINVAL;
	src = open_snap_dir(s->tree, dir + rlen + (dir[rlen] == '/'));
	if (src < 0)
		return src;
	if ((dst = open_ws_dir(ws, dir)) < 0) {
		close(src);
		return dst;
	}
	/* A snapshot of this workspace vouches for the files unchanged since it was taken. */
	if (same_root(s, ws)) {
		ts.trust = TRUST_DST;
		ts.trust_before = m->time;
	}
	pthread_mutex_lock(&snap_lock);
	s->phase = "restoring";
	s->progress = &ts.st;
	s->total_files = m->files;
	s->total_bytes = m->bytes;
	pthread_mutex_unlock(&snap_lock);
	rc = tree_sync(src, dst, &ts);
	pthread_mutex_lock(&snap_lock);
	s->restored_files = ts.st.files;
	s->progress = NULL;
	pthread_mutex_unlock(&snap_lock);
	close(src);
	close(dst);
	return rc;
}

int snap_restore_run(struct snapshot *s, const char *line)
{
	int ws = open(snap_workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;
	bool force, frozen = false;
	char *dir;

	if (ws < 0)
		return -errno;
	if ((rc = snap_restore_parse(line, strlen(line), &force, &dir)) == 0 &&
	    (rc = quiesce(s, dir ? dir : s->meta.root, force, &frozen)) == 0) {
		rc = restore_into(s, ws, dir ? dir : s->meta.root);
		if (frozen)
			cgroup_freeze(cgroup_sandbox(), false);
	}
	free(dir);
	close(ws);
	return rc;
}
