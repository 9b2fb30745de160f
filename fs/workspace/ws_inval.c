/* Coherence of workspace/ with what the sandbox changes in the backing directory directly: the
 * kernel keeps names, absences, attributes, listings and (without passthrough) data of
 * workspace/ for cache_timeout, so every change a command makes must be invalidated in the
 * kernel before the command's end can be read.
 *
 * Every backing directory the kernel holds an inode for has an inotify watch (watches are not
 * descriptors). While a command or background process runs (the core's run hooks), the events
 * are read on the core loop thread each time it wakes, before it handles what woke it; a timer
 * wakes the loop meanwhile so that the queue does not overflow. What woke it may bring more than
 * it announced (a read of the report pipe takes a report written after the wake), so when a run
 * ends the queue is read at once (core lock held: reading never blocks) and if anything was
 * still there, or the end was not seen on the loop thread, the run's end is published only
 * after the loop has sent those invalidations (run_end, loop_after_sync). Each event
 * becomes an invalidation: a name created, removed or moved drops the kernel's entry (or cached
 * absence) of that name and the directory's attributes and listing; a file's attributes or
 * contents changed drop that inode's attributes (and its pages without passthrough, which
 * shares them with the backing file anyway). A queue overflow invalidates everything the
 * kernel holds. A directory that could get no watch is never cached: its children's entries,
 * absences and attributes get timeout 0 (ws_inode.c), and so does it.
 *
 * Invalidations are sent without any lock held and from the loop thread, never inside a FUSE
 * request: the kernel may wait for a request in the same directory, which the FUSE threads
 * answer without the core lock. While nothing runs, events (the host's own changes through
 * workspace/, which the kernel already knows) are left in the queue and dropped unread when
 * the next command starts. */
#include "ws_priv.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "run.h"
#include "xmalloc.h"

#define WATCH_MASK                                                                                 \
	(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_MODIFY |             \
	 IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
#define NAME_EVENTS   (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)
#define CHANGE_EVENTS (IN_ATTRIB | IN_MODIFY | IN_CLOSE_WRITE)
/* While something runs, the loop reads the queue at least this often. */
#define TICK_MS 50
/* Events read when runs end and not yet sent; past this, everything is invalidated instead. */
#define PEND_MAX  (1024 * 1024)
#define EVENT_BUF (64 * 1024)

static struct {
	int fd; /* inotify; -1: none, nothing is cached */
	struct fuse_session *se;
	atomic_int active; /* runs in progress; changed with the core lock held */
	atomic_bool off;   /* workspace/ is a kernel mount: nothing to keep coherent */
	struct loop_timer tick;
	unsigned gen; /* one per buffer of events read */
	/* Read by run ends, for the loop to send; under pend_lock. */
	pthread_mutex_t pend_lock;
	char *pend;
	size_t npend;
	bool pend_overflow;
	atomic_bool pending;
	/* watch descriptor -> inode, under the table lock */
	struct ws_inode **wdb;
	size_t nwdb, nwd;
} wi = {.fd = -1, .pend_lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- watches (table lock held) ---- */

static struct ws_inode **wd_slot(int wd)
{
	struct ws_inode **pp = &wi.wdb[(size_t)wd & (wi.nwdb - 1)];

	while (*pp && (*pp)->wd != wd)
		pp = &(*pp)->wd_next;
	return pp;
}

static void wd_grow(void)
{
	struct ws_inode **old = wi.wdb;
	size_t n = wi.nwdb;

	wi.nwdb = n ? n * 2 : 1024;
	wi.wdb = xcalloc(wi.nwdb, sizeof(*wi.wdb));
	for (size_t i = 0; i < n; i++) {
		struct ws_inode *in = old[i], *next;

		for (; in; in = next) {
			next = in->wd_next;
			in->wd_next = wi.wdb[(size_t)in->wd & (wi.nwdb - 1)];
			wi.wdb[(size_t)in->wd & (wi.nwdb - 1)] = in;
		}
	}
	free(old);
}

void ws_inval_watch(struct ws_inode *in)
{
	static bool warned;
	char p[32];
	int wd;

	in->wd = -1;
	if (wi.fd < 0)
		return;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", in->fd);
	wd = inotify_add_watch(wi.fd, p, WATCH_MASK);
	if (wd < 0) {
		if (!warned) {
			warned = true;
			log_warn("workspace: inotify_add_watch (fs.inotify.max_user_watches?); "
				 "directories without a watch are not cached");
		}
		return;
	}
	if (wi.nwd >= wi.nwdb)
		wd_grow();
	if (*wd_slot(wd))
		return; /* the same directory under another inode: its changes go there */
	in->wd = wd;
	in->wd_next = wi.wdb[(size_t)wd & (wi.nwdb - 1)];
	wi.wdb[(size_t)wd & (wi.nwdb - 1)] = in;
	wi.nwd++;
}

static void wd_forget(struct ws_inode *in)
{
	struct ws_inode **pp = wd_slot(in->wd);

	if (*pp == in) {
		*pp = in->wd_next;
		wi.nwd--;
	}
	in->wd = -1;
}

void ws_inval_unwatch(struct ws_inode *in)
{
	int wd = in->wd;

	if (wd < 0)
		return;
	wd_forget(in);
	inotify_rm_watch(wi.fd, wd);
}

bool ws_inval_watched(const struct ws_inode *dir)
{
	return dir->wd >= 0;
}

/* ---- invalidations (loop thread, no lock) ---- */

static off_t data_off(void)
{
	/* Passthrough files share the backing file's pages: only attributes are stale. */
	return ws_dev_pt_active() ? -1 : 0;
}

static void inval_inode(struct ws_inode *in, off_t off)
{
	if (in->mark == wi.gen)
		return;
	in->mark = wi.gen;
	fuse_lowlevel_notify_inval_inode(wi.se, ino_of(in), off, 0);
}

static void inval_entry(struct ws_inode *dir, const char *name)
{
	fuse_lowlevel_notify_inval_entry(wi.se, ino_of(dir), name, strlen(name));
}

/* A file in dir changed in place: its inode's attributes, if the kernel holds it. */
static void child_changed(struct ws_inode *dir, const char *name)
{
	struct ws_inode *in = NULL;
	struct stat st;
	int fd = ws_budget_use(dir), rc;

	if (fd < 0)
		return;
	rc = fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW);
	ws_budget_unuse(dir);
	if (rc == -1)
		return; /* gone: its removal has an event of its own */
	ws_inode_lock();
	in = ws_inode_find(st.st_dev, st.st_ino);
	if (in)
		in->refs++;
	ws_inode_unlock();
	if (!in)
		return;
	inval_inode(in, S_ISDIR(st.st_mode) ? 0 : data_off());
	ws_inode_drop(in);
}

/* Drops the kernel's entries of every name now in dir (some may be cached as absent). */
static void inval_names(struct ws_inode *dir)
{
	struct dirent *de;
	DIR *dp;
	int fd = ws_budget_use(dir), dfd;

	if (fd < 0)
		return;
	ws_budget_fd_opening();
	dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ws_budget_unuse(dir);
	dp = dfd < 0 ? NULL : fdopendir(dfd);
	if (!dp) {
		if (dfd >= 0)
			close(dfd);
		ws_budget_fd_closed();
		return;
	}
	while ((de = readdir(dp)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			inval_entry(dir, de->d_name);
	closedir(dp);
	ws_budget_fd_closed();
}

struct known {
	struct ws_inode *in, *parent;
	char *name;
};

struct known_list {
	struct known *v;
	size_t n, cap;
};

static void collect(struct ws_inode *in, void *arg)
{
	struct known_list *l = arg;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 1024;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	in->refs++;
	if (in->parent)
		in->parent->refs++;
	l->v[l->n++] = (struct known){in, in->parent, in->name ? xstrdup(in->name) : NULL};
}

/* Some changes are unknown (the queue overflowed, a restore replaced files while nothing ran):
 * everything the kernel holds goes. */
static void inval_all(void)
{
	struct known_list l = {0};

	ws_inode_lock();
	ws_inode_each(collect, &l);
	ws_inode_unlock();
	wi.gen++;
	for (size_t i = 0; i < l.n; i++) {
		struct known *k = &l.v[i];

		inval_inode(k->in, k->in->isdir ? 0 : data_off());
		if (k->in->isdir)
			inval_names(k->in);
		if (k->parent && k->name)
			inval_entry(k->parent, k->name);
	}
	for (size_t i = 0; i < l.n; i++) {
		if (l.v[i].parent)
			ws_inode_drop(l.v[i].parent);
		ws_inode_drop(l.v[i].in);
		free(l.v[i].name);
	}
	free(l.v);
}

static void hold_multi(struct ws_inode *in, void *arg)
{
	struct known_list *l = arg;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	in->refs++;
	l->v[l->n++] = (struct known){in, NULL, NULL};
}

/* A name went: if it was one of several links of a file, that file's link count changed, but
 * the event does not say which file it was; every such file the kernel holds is refreshed. */
static void inval_multi(void)
{
	struct known_list l = {0};

	ws_inode_lock();
	ws_inode_each_multi(hold_multi, &l);
	ws_inode_unlock();
	for (size_t i = 0; i < l.n; i++) {
		inval_inode(l.v[i].in, data_off());
		ws_inode_drop(l.v[i].in);
	}
	free(l.v);
}

static void handle_event(const struct inotify_event *ev)
{
	struct ws_inode *in;

	ws_inode_lock();
	in = *wd_slot(ev->wd);
	if (in) {
		in->refs++;
		if (ev->mask & IN_IGNORED)
			wd_forget(in); /* the directory is gone, and its watch with it */
	}
	ws_inode_unlock();
	if (!in)
		return;
	if (ev->len && (ev->mask & NAME_EVENTS)) {
		inval_entry(in, ev->name);
		inval_inode(in, 0);
		/* The file named: a new link, a rename, changes its ctime and link count. */
		if (ev->mask & (IN_CREATE | IN_MOVED_TO))
			child_changed(in, ev->name);
		else
			inval_multi();
	} else if (ev->len && (ev->mask & CHANGE_EVENTS)) {
		child_changed(in, ev->name);
	} else if (!ev->len) {
		inval_inode(in, 0);
	}
	ws_inode_drop(in);
}

/* Turns a buffer of events into invalidations; returns whether the queue had overflowed. */
static bool apply_events(const char *buf, size_t n)
{
	bool overflow = false;

	wi.gen++;
	for (const char *p = buf; p < buf + n;) {
		const struct inotify_event *ev = (const void *)p;

		if (ev->mask & IN_Q_OVERFLOW)
			overflow = true;
		else
			handle_event(ev);
		p += sizeof(*ev) + ev->len;
	}
	return overflow;
}

/* Events dropped unread still end their watches: a gone directory's watch is gone. */
static void forget_ignored(const char *buf, size_t n)
{
	for (const char *p = buf; p < buf + n;) {
		const struct inotify_event *ev = (const void *)p;
		struct ws_inode *in;

		if (ev->mask & IN_IGNORED) {
			ws_inode_lock();
			if ((in = *wd_slot(ev->wd)))
				wd_forget(in);
			ws_inode_unlock();
		}
		p += sizeof(*ev) + ev->len;
	}
}

/* What run ends read and left for the loop; *overflow set if some was dropped. */
static char *pend_take(size_t *n, bool *overflow)
{
	char *buf;

	pthread_mutex_lock(&wi.pend_lock);
	buf = wi.pend;
	*n = wi.npend;
	*overflow = wi.pend_overflow;
	wi.pend = NULL;
	wi.npend = 0;
	wi.pend_overflow = false;
	atomic_store(&wi.pending, false);
	pthread_mutex_unlock(&wi.pend_lock);
	return buf;
}

/* Core lock held, any thread: moves what the queue holds now into the pending events; returns
 * whether any are pending. */
static bool pend_read(void)
{
	char buf[EVENT_BUF] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool any;
	ssize_t n;

	pthread_mutex_lock(&wi.pend_lock);
	while ((n = read(wi.fd, buf, sizeof(buf))) > 0) {
		/* Past the bound all will be invalidated: the rest need not be kept. */
		if (wi.npend + (size_t)n > PEND_MAX) {
			wi.pend_overflow = true;
			continue;
		}
		wi.pend = xrealloc(wi.pend, wi.npend + (size_t)n);
		memcpy(wi.pend + wi.npend, buf, (size_t)n);
		wi.npend += (size_t)n;
	}
	any = wi.npend || wi.pend_overflow;
	if (any)
		atomic_store(&wi.pending, true);
	pthread_mutex_unlock(&wi.pend_lock);
	return any;
}

/* Reads the queue to its end; apply: turns the pending events and the queue's into
 * invalidations. */
static void drain(bool apply)
{
	char buf[EVENT_BUF] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool overflow = false;
	ssize_t n;

	if (apply) {
		size_t np;
		char *p = pend_take(&np, &overflow);

		if (p && !overflow)
			overflow = apply_events(p, np);
		free(p);
	}
	while ((n = read(wi.fd, buf, sizeof(buf))) > 0) {
		if (!apply)
			forget_ignored(buf, (size_t)n);
		else if (apply_events(buf, (size_t)n))
			overflow = true;
	}
	if (overflow) {
		log_info("workspace: inotify queue overflow; invalidating every cached entry");
		inval_all();
	}
}

void ws_inval_everything(void)
{
	if (wi.fd < 0 || atomic_load(&wi.off))
		return;
	drain(false); /* all of it is covered below */
	free(pend_take(&(size_t){0}, &(bool){false}));
	wi.gen++;
	inval_all();
}

/* ---- core hooks ---- */

static void on_wake(void)
{
	if (atomic_load_explicit(&wi.off, memory_order_relaxed))
		return;
	if (atomic_load_explicit(&wi.active, memory_order_relaxed) > 0 ||
	    atomic_load_explicit(&wi.pending, memory_order_relaxed))
		drain(true);
}

static void on_tick(struct loop_timer *t)
{
	if (atomic_load(&wi.active) > 0 && !atomic_load(&wi.off))
		loop_timer_arm(t, TICK_MS);
}

/* The first run to start drops what queued while nothing ran: the host's own changes. */
static void on_begin(void)
{
	if (atomic_fetch_add(&wi.active, 1) == 0 && !atomic_load(&wi.off)) {
		drain(false);
		loop_timer_arm(&wi.tick, TICK_MS);
	}
}

/* What the run changed is in the queue by now; the end waits if any of it is unsent, or if the
 * loop may be sending some of it this moment (the end was seen on another thread). */
static bool on_end(void)
{
	atomic_fetch_sub(&wi.active, 1);
	if (atomic_load(&wi.off))
		return false;
	return pend_read() || !loop_on_thread();
}

void ws_inval_init(bool cache, double timeout)
{
	if (!cache || timeout <= 0)
		return;
	wi.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (wi.fd < 0)
		log_warn("workspace: inotify_init1; nothing of workspace/ is cached");
}

void ws_inval_start(struct fuse_session *se)
{
	if (wi.fd < 0)
		return;
	wi.se = se;
	wi.tick.fn = on_tick;
	run_set_hooks(on_begin, on_end);
	loop_set_wake_hook(on_wake);
}

void ws_inval_off(void)
{
	atomic_store(&wi.off, true);
}

void ws_inval_stop(void)
{
	if (wi.fd < 0)
		return;
	run_set_hooks(NULL, NULL);
	loop_set_wake_hook(NULL);
	close(wi.fd);
	wi.fd = -1;
	free(pend_take(&(size_t){0}, &(bool){false}));
	free(wi.wdb);
	wi.wdb = NULL;
	wi.nwdb = wi.nwd = 0;
}
