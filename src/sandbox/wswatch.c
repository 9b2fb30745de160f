/* Workspace changes in the journal (wswatch.h): inotify on every directory of the workspace,
 * read by a thread of its own. A directory is opened for its watch with openat2 beneath the
 * workspace's root and without following any link (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS),
 * and watched through that descriptor's /proc path: a name the sandbox swaps for a link while
 * it is looked up never has the host watch what the link points at. A directory made is
 * watched, then listed: what was made in it before its watch came is reported too. The
 * thread's first work is the watches of what is there at start; a stop ends any walk. */
#include "wswatch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "journal.h"
#include "log.h"
#include "xmalloc.h"

#define MASK                                                                                       \
	(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DONT_FOLLOW |   \
	 IN_ONLYDIR | IN_EXCL_UNLINK)
/* Events a second at most, the rest counted (a loop that rewrites a file must not flood). */
#define PER_S 20000

struct dirw {
	int wd;
	char *rel; /* below the workspace's root, "" for it */
};

static int root_fd = -1, ino_fd = -1, stop_fd[2] = {-1, -1};
static pthread_t thread;
static bool running;
static int stopping; /* atomic: the daemon stops; a long scan or backlog ends at once */
static struct dirw *dirs;
static size_t ndirs, cap;
static uint64_t window_ns;
static unsigned in_window, over;
static bool full_said;

static struct dirw *by_wd(int wd)
{
	for (size_t i = 0; i < ndirs; i++)
		if (dirs[i].wd == wd)
			return &dirs[i];
	return NULL;
}

static char *join_rel(const char *dir, const char *name)
{
	return *dir ? xasprintf("%s/%s", dir, name) : xstrdup(name);
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void say_over(void)
{
	struct jrec e;

	if (!over)
		return;
	jrec_begin(&e, "fs.more", NULL);
	jrec_int(&e, "count", over);
	jrec_commit(&e);
	over = 0;
}

static void event(const char *kind, const char *path, const char *to, bool dir)
{
	struct jrec e;
	uint64_t now = now_ns();

	if (now - window_ns >= 1000000000ull) {
		say_over();
		window_ns = now;
		in_window = 0;
	}
	if (++in_window > PER_S) {
		over++;
		return;
	}
	jrec_begin(&e, kind, NULL);
	jrec_str(&e, "path", path);
	if (to)
		jrec_str(&e, "to", to);
	if (dir)
		jrec_bool(&e, "dir", true);
	jrec_commit(&e);
}

static void watch_dir(const char *rel, bool report_contents);

/* A directory's entries, reported as made (they came before its watch), and its directories
 * watched in turn. */
static void scan(int fd, const char *rel, bool report)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;

	if (!d) {
		close(fd);
		return;
	}
	while ((e = readdir(d)) && !__atomic_load_n(&stopping, __ATOMIC_RELAXED)) {
		char *sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		sub = join_rel(rel, e->d_name);
		if (report)
			event("fs.create", sub, NULL, e->d_type == DT_DIR);
		if (e->d_type == DT_DIR)
			watch_dir(sub, report);
		free(sub);
	}
	closedir(d);
}

static void watch_dir(const char *rel, bool report_contents)
{
	struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
	char proc[64];
	int fd, wd;

	fd = (int)syscall(SYS_openat2, root_fd, *rel ? rel : ".", &how, sizeof(how));
	if (fd < 0)
		return; /* gone, or not a directory we may follow: nothing to watch */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	wd = inotify_add_watch(ino_fd, proc, MASK & ~IN_DONT_FOLLOW);
	if (wd < 0) {
		if (errno == ENOSPC && !full_said) {
			full_said = true;
			log_warnx("workspace changes: no inotify watch left (fs.inotify."
				  "max_user_watches): changes below %s are not in the journal",
				  rel);
			event("fs.unwatched", rel, NULL, true);
		}
		close(fd);
		return;
	}
	if (!by_wd(wd)) {
		if (ndirs == cap) {
			cap = cap ? cap * 2 : 64;
			dirs = xrealloc(dirs, cap * sizeof(*dirs));
		}
		dirs[ndirs++] = (struct dirw){wd, xstrdup(rel)};
	}
	scan(fd, rel, report_contents);
}

/* A directory moved (or gone): its watches and those below it get their new paths, or go. */
static void moved_dir(const char *from, const char *to)
{
	size_t fl = strlen(from);

	for (size_t i = 0; i < ndirs;) {
		char *r = dirs[i].rel;

		if (!strcmp(r, from) || (!strncmp(r, from, fl) && r[fl] == '/')) {
			if (to) {
				dirs[i].rel = xasprintf("%s%s", to, r + fl);
				free(r);
			} else {
				inotify_rm_watch(ino_fd, dirs[i].wd);
				free(r);
				dirs[i] = dirs[--ndirs];
				continue;
			}
		}
		i++;
	}
}

static void forget_wd(int wd)
{
	struct dirw *d = by_wd(wd);

	if (d) {
		free(d->rel);
		*d = dirs[--ndirs];
	}
}

/* A rename is a MOVED_FROM and a MOVED_TO with one cookie, one after the other. */
static struct {
	uint32_t cookie;
	char *path;
	bool dir;
} pending;

static void flush_pending(void)
{
	if (!pending.path)
		return;
	/* moved out of the workspace */
	event("fs.remove", pending.path, NULL, pending.dir);
	if (pending.dir)
		moved_dir(pending.path, NULL);
	free(pending.path);
	pending.path = NULL;
}

static void handle(const struct inotify_event *ev)
{
	struct dirw *d = by_wd(ev->wd);
	bool dir = ev->mask & IN_ISDIR;
	char *path;

	if (ev->mask & IN_IGNORED) {
		forget_wd(ev->wd);
		return;
	}
	if (!d || !ev->len)
		return;
	path = join_rel(d->rel, ev->name);
	if (!(ev->mask & IN_MOVED_TO))
		flush_pending();
	if (ev->mask & IN_CREATE) {
		event("fs.create", path, NULL, dir);
		if (dir)
			watch_dir(path, true);
	} else if (ev->mask & IN_DELETE) {
		event("fs.remove", path, NULL, dir);
	} else if (ev->mask & IN_CLOSE_WRITE) {
		event("fs.write", path, NULL, false);
	} else if (ev->mask & IN_MOVED_FROM) {
		flush_pending();
		pending.cookie = ev->cookie;
		pending.path = path;
		pending.dir = dir;
		return;
	} else if (ev->mask & IN_MOVED_TO) {
		if (pending.path && pending.cookie == ev->cookie) {
			event("fs.rename", pending.path, path, dir);
			if (dir)
				moved_dir(pending.path, path);
			free(pending.path);
			pending.path = NULL;
		} else {
			flush_pending();
			event("fs.create", path, NULL, dir); /* moved in from outside */
			if (dir)
				watch_dir(path, true);
		}
	}
	free(path);
}

static void *watch_loop(void *arg)
{
	char buf[64 << 10] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct pollfd p[2] = {{.fd = ino_fd, .events = POLLIN},
			      {.fd = stop_fd[0], .events = POLLIN}};

	(void)arg;
	/* here, not at start: a large workspace takes a while, and the mount serves meanwhile */
	watch_dir("", false);
	for (;;) {
		/* a MOVED_FROM alone for 10 ms: its MOVED_TO is not coming (moved out) */
		int n = poll(p, 2, pending.path ? 10 : over ? 1000 : -1);
		ssize_t len;

		if (p[1].revents)
			break;
		if (n == 0) {
			flush_pending();
			say_over();
			continue;
		}
		len = read(ino_fd, buf, sizeof(buf));
		if (len <= 0)
			continue;
		for (char *at = buf;
		     at < buf + len && !__atomic_load_n(&stopping, __ATOMIC_RELAXED);) {
			const struct inotify_event *ev = (const void *)at;

			if (ev->mask & IN_Q_OVERFLOW) {
				log_warnx("workspace changes: the kernel's queue overflowed");
				event("fs.overflow", "", NULL, false);
			} else {
				handle(ev);
			}
			at += sizeof(*ev) + ev->len;
		}
	}
	flush_pending();
	say_over();
	return NULL;
}

int wswatch_start(const char *workspace)
{
	sigset_t all, was;
	int rc;

	stopping = 0;
	root_fd = open(workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ino_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (root_fd < 0 || ino_fd < 0 || pipe2(stop_fd, O_CLOEXEC) < 0) {
		rc = -errno;
		wswatch_stop();
		return rc;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &was);
	rc = -pthread_create(&thread, NULL, watch_loop, NULL);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	running = rc == 0;
	if (rc < 0)
		wswatch_stop();
	return rc;
}

void wswatch_stop(void)
{
	if (running) {
		__atomic_store_n(&stopping, 1, __ATOMIC_RELAXED);
		if (write(stop_fd[1], "", 1) < 0)
			log_warn("workspace changes: cannot stop the watcher");
		pthread_join(thread, NULL);
		running = false;
	}
	for (size_t i = 0; i < ndirs; i++)
		free(dirs[i].rel);
	free(dirs);
	dirs = NULL;
	ndirs = cap = 0;
	if (root_fd >= 0)
		close(root_fd);
	if (ino_fd >= 0)
		close(ino_fd);
	for (int i = 0; i < 2; i++)
		if (stop_fd[i] >= 0)
			close(stop_fd[i]);
	root_fd = ino_fd = stop_fd[0] = stop_fd[1] = -1;
}
