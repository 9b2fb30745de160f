/* The handover of the mount owner's files to the sandbox's user (see handover.h).
 *
 * How the owner's new files are found: the host's creates through a kernel-mounted workspace
 * never reach the daemon, and fanotify cannot report creates on one mount (only on a whole
 * filesystem, which may be /), so every directory of the workspace has an inotify watch for
 * what is created or moved into it. A watcher thread reads the events as they come (so a build
 * in the sandbox does not overflow the queue), and notes each new entry that belongs to the
 * owner (one fstatat; the sandbox's own entries are dropped there). New directories get a watch
 * and are read once, which covers what was created in them before the watch. handover_run
 * reads what is still queued, then gives each noted entry away. Giving away waits for the next
 * command rather than the event, so a host tool is never raced while it still sets the owner
 * or mode of what it is writing (cp -p, tar, install -o).
 *
 * Watched directories are kept by handle or descriptor (handover_dirs.c), every name is
 * resolved relative to a directory's descriptor with O_NOFOLLOW, every change is made on a
 * descriptor of the very inode checked, and a directory is checked to be below the workspace's
 * root before anything in it is given, so a symlink or a swapped directory of the sandbox's
 * never leads the daemon out of the workspace. Files
 * with other links (a local git clone's objects, hard-linked from outside) and device nodes
 * (their new owner could open them to everyone: the backing directory is not nodev) stay the
 * owner's; set-id bits go (chown clears them on files), so nothing the host put there runs as
 * the sandbox's user with more than it had. Where a directory cannot be watched (the watch
 * limit, fs.inotify.max_user_watches, or the descriptor limit), every handover walks the whole
 * workspace instead: slower, as complete. */
#include "handover.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "handover_priv.h"
#include "log.h"
#include "samemount.h"
#include "xmalloc.h"

#define WATCH_MASK (IN_CREATE | IN_MOVED_TO | IN_ONLYDIR)
#define MAX_DEPTH  4096 /* bound of the walk up to the root (PATH_MAX allows ~2048) */
#define MAX_LEVELS 256	/* directories below the root a walk descends */

/* An entry of the owner's seen in a watched directory, given away at the next handover_run. */
struct note {
	int wd;
	char *name;
};

static atomic_bool active;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_cv = PTHREAD_COND_INITIALIZER;
static pthread_t thread;
/* The rest: mu. */
static bool ready;    /* the first walk is done */
static bool degraded; /* some directory has no watch: each handover walks everything */
static bool rescan;   /* events were lost: walk everything again */
static int ifd = -1, stop_fd = -1, root_fd = -1;
static dev_t root_dev;
static ino_t root_ino;
static uid_t owner_uid, to_uid;
static gid_t owner_gid, to_gid;
static struct note *notes;
static size_t nnotes, notes_cap;

/* ---- what is handed over ---- */

static bool is_owners(const struct stat *st)
{
	if (st->st_uid != owner_uid || st->st_dev != root_dev)
		return false;
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		return false;
	return S_ISDIR(st->st_mode) || st->st_nlink <= 1;
}

/* Gives name in dirfd away if it is (still) the owner's: checked and changed on one descriptor.
 * The owner's group goes with it; another group (chosen by the host) stays. Returns 1 if given. */
static int give(int dirfd, const char *name)
{
	int fd = open_here(dirfd, name, O_PATH), given = 0; /* a link itself; never a mount */
	struct stat st;

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0 && is_owners(&st)) {
		if (fchownat(fd, "", to_uid, st.st_gid == owner_gid ? to_gid : (gid_t)-1,
			     AT_EMPTY_PATH) == 0)
			given = 1;
		else
			log_warn("handover: %s", name);
	}
	close(fd);
	return given;
}

static void note(int wd, const char *name)
{
	if (nnotes == notes_cap) {
		notes_cap = notes_cap ? notes_cap * 2 : 64;
		notes = xrealloc(notes, notes_cap * sizeof(*notes));
	}
	notes[nnotes].wd = wd;
	notes[nnotes++].name = xstrdup(name);
}

static void notes_clear(void)
{
	for (size_t i = 0; i < nnotes; i++)
		free(notes[i].name);
	nnotes = 0;
}

/* Whether directory fd is (still) below the workspace's root: only the host could have moved it
 * out (the sandbox sees nothing outside), and what is there is not the sandbox's to get. */
static bool inside(int fd)
{
	struct stat st, prev = {0};
	int cur = openat(fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC), up;

	for (int depth = 0; cur >= 0 && depth < MAX_DEPTH; depth++) {
		if (fstat(cur, &st) < 0 || st.st_dev != root_dev ||
		    (depth > 0 && st.st_ino == prev.st_ino))
			break;
		if (st.st_ino == root_ino) {
			close(cur);
			return true;
		}
		prev = st;
		up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		close(cur);
		cur = up;
	}
	if (cur >= 0)
		close(cur);
	return false;
}

/* ---- walking ---- */

static void degrade(int err)
{
	if (!degraded)
		log_warnx("handover: cannot watch a workspace directory (%s; see "
			  "fs.inotify.max_user_watches): from now on, every command's start walks "
			  "the whole workspace",
			  strerror(err));
	degraded = true;
}

/* Watches directory fd (not taken). Returns its watch, or -errno; *fresh says whether the
 * directory was not watched yet. */
static int watch(int fd, bool *fresh)
{
	char path[40];
	int wd, rc;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	wd = inotify_add_watch(ifd, path, WATCH_MASK);
	if (wd < 0)
		return -errno;
	*fresh = !handover_dirs_has(wd);
	if (*fresh && (rc = handover_dirs_add(wd, fd)) < 0) {
		inotify_rm_watch(ifd, wd);
		return rc;
	}
	return wd;
}

/* One directory being read by walk: its O_PATH descriptor, its stream and its watch. */
struct frame {
	int fd, wd;
	DIR *dir;
};

/* Opens directory fd (taken) for walk: watched (wd) unless give_now, and read when new or all.
 * Returns 1 with *f set if it is to be read, else 0 (fd closed). */
static int enter(int fd, bool give_now, bool all, struct frame *f)
{
	bool fresh = false;
	int wd = -1, rfd;

	if (!give_now) {
		wd = degraded ? -1 : watch(fd, &fresh);
		if (wd < 0 && !degraded)
			degrade(-wd);
		if (wd < 0 || !(fresh || all)) {
			close(fd);
			return 0;
		}
	}
	rfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	f->dir = rfd >= 0 ? fdopendir(rfd) : NULL;
	if (!f->dir) {
		if (rfd >= 0)
			close(rfd);
		close(fd);
		return 0;
	}
	f->fd = fd;
	f->wd = wd;
	return 1;
}

/* The tree below directory top (taken), depth first, two descriptors a level. With give_now,
 * the owner's entries are given away at once and nothing is watched; else every directory
 * gets a watch and its owner's entries are noted, and directories watched already are read
 * again only with all. Below MAX_LEVELS nothing is watched (a chain a command made that deep
 * would only cost descriptors; no host tool writes there). Returns how many were given. */
static size_t walk(int top, bool give_now, bool all)
{
	struct frame stack[MAX_LEVELS], *f;
	struct dirent *de;
	struct stat st;
	size_t n = 0, given = 0;
	int sub;

	n += (size_t)enter(top, give_now, all, &stack[0]);
	while (n) {
		f = &stack[n - 1];
		if (!(de = readdir(f->dir))) {
			closedir(f->dir);
			close(f->fd);
			n--;
			continue;
		}
		/* A mount nested in the workspace is neither given away nor entered. */
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    lstat_here(f->fd, de->d_name, &st) < 0)
			continue;
		if (is_owners(&st)) {
			if (give_now)
				given += (size_t)give(f->fd, de->d_name);
			else
				note(f->wd, de->d_name);
		}
		if (!S_ISDIR(st.st_mode) || st.st_dev != root_dev || n == MAX_LEVELS)
			continue;
		sub = open_here(f->fd, de->d_name, O_PATH | O_DIRECTORY);
		if (sub >= 0)
			n += (size_t)enter(sub, give_now, all, &stack[n]);
		else if (errno == EMFILE || errno == ENFILE)
			degrade(errno);
	}
	return given;
}

static void on_event(const struct inotify_event *ev)
{
	struct stat st;
	int dfd, fd;

	if (ev->mask & IN_Q_OVERFLOW) {
		rescan = true;
		return;
	}
	if (ev->mask & IN_IGNORED) {
		handover_dirs_drop(ev->wd);
		return;
	}
	if (!ev->len || (dfd = handover_dirs_fd(ev->wd)) < 0 || lstat_here(dfd, ev->name, &st) < 0)
		return;
	if (is_owners(&st))
		note(ev->wd, ev->name);
	if (S_ISDIR(st.st_mode) && st.st_dev == root_dev && !degraded) {
		fd = open_here(dfd, ev->name, O_PATH | O_DIRECTORY);
		if (fd >= 0)
			walk(fd, false, false);
	}
}

/* Reads every queued event. */
static void drain(void)
{
	char buf[65536] __attribute__((aligned(__alignof__(struct inotify_event))));
	const struct inotify_event *ev;
	ssize_t n;

	while ((n = read(ifd, buf, sizeof(buf))) > 0)
		for (char *p = buf; p < buf + n; p += sizeof(*ev) + ev->len) {
			ev = (const struct inotify_event *)(void *)p;
			on_event(ev);
		}
	if (rescan) {
		rescan = false;
		walk(openat(root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC), false, true);
	}
}

static void *watcher(void *arg)
{
	struct pollfd p[2] = {{.fd = ifd, .events = POLLIN}, {.fd = stop_fd, .events = POLLIN}};

	(void)arg;
	pthread_mutex_lock(&mu);
	walk(openat(root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC), false, true);
	ready = true;
	pthread_cond_broadcast(&ready_cv);
	pthread_mutex_unlock(&mu);
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_warn("handover: poll");
			break;
		}
		if (p[1].revents)
			break;
		pthread_mutex_lock(&mu);
		drain();
		handover_dirs_sweep(ifd);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

/* ---- the interface ---- */

void handover_run(void)
{
	size_t given = 0;
	int last_wd = -1, dfd;
	bool last_in = false;

	if (!atomic_load(&active))
		return;
	pthread_mutex_lock(&mu);
	while (!ready && atomic_load(&active))
		pthread_cond_wait(&ready_cv, &mu);
	if (!atomic_load(&active)) { /* stopped meanwhile */
		pthread_mutex_unlock(&mu);
		return;
	}
	drain();
	if (degraded)
		given = walk(openat(root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC), true, true);
	else
		for (size_t i = 0; i < nnotes; i++) {
			if ((dfd = handover_dirs_fd(notes[i].wd)) < 0)
				continue;
			if (notes[i].wd != last_wd) {
				last_wd = notes[i].wd;
				last_in = inside(dfd);
			}
			if (last_in)
				given += (size_t)give(dfd, notes[i].name);
		}
	notes_clear();
	pthread_mutex_unlock(&mu);
	if (given)
		log_debug("handover: %zu files of uid %u given to uid %u", given,
			  (unsigned)owner_uid, (unsigned)to_uid);
}

int handover_start(const char *workspace, uid_t owner_u, gid_t owner_g, uid_t to_u, gid_t to_g)
{
	sigset_t all, old;
	struct stat st;
	int rc;

	owner_uid = owner_u;
	owner_gid = owner_g;
	to_uid = to_u;
	to_gid = to_g;
	root_fd = open(workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0 || fstat(root_fd, &st) < 0)
		goto fail;
	root_dev = st.st_dev;
	root_ino = st.st_ino;
	if ((ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0 ||
	    (stop_fd = eventfd(0, EFD_CLOEXEC)) < 0)
		goto fail;
	handover_dirs_init(root_fd);
	/* The thread takes no signal: a SIGTERM it swallowed would not stop the daemon. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&thread, NULL, watcher, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		errno = rc;
		goto fail;
	}
	atomic_store(&active, true);
	log_info("handover: files of uid %u in the workspace go to uid %u before each command",
		 (unsigned)owner_uid, (unsigned)to_uid);
	return 0;
fail:
	rc = -errno;
	handover_stop();
	return rc;
}

void handover_stop(void)
{
	uint64_t one = 1;

	if (atomic_exchange(&active, false)) {
		if (write(stop_fd, &one, sizeof(one)) != sizeof(one))
			log_warn("handover: stopping the watcher");
		pthread_join(thread, NULL);
	}
	pthread_mutex_lock(&mu);
	handover_dirs_clear();
	notes_clear();
	free(notes);
	notes = NULL;
	notes_cap = 0;
	ready = degraded = rescan = false;
	if (ifd >= 0)
		close(ifd);
	if (stop_fd >= 0)
		close(stop_fd);
	if (root_fd >= 0)
		close(root_fd);
	ifd = stop_fd = root_fd = -1;
	pthread_cond_broadcast(&ready_cv);
	pthread_mutex_unlock(&mu);
}
