/* The fleet's sandboxes (fleet.h): the table, their daemons' lives and their files.
 *
 * A sandbox ID is STATE_DIR/sandboxes/ID: workspace/, state/ (the daemon's state dir) and
 * sbxfs.ini (its config, from the fleet's sandbox_config). Its daemon is a plain sbxfs started
 * without -f: the starting process exits 0 once ROOT/ID/fs answers (else 1 with the reason on
 * its stderr), and the daemon's pid is then in state/sbxfs.pid. A pidfd per daemon tells the
 * monitor thread when one ends: unless it was asked to, it is started again (its saved state
 * comes back, saved.h), a little later each time it fails again at once. Starting and stopping
 * run on a thread each, so that the FUSE side never waits on a daemon. */
#include "fleet.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mount.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "xmalloc.h"

extern char **environ;

#define STOP_WAIT_MS	10000
#define SHUTDOWN_WAIT_S 30
#define QUICK_FAIL_S	5 /* a daemon that ends this soon after its start failed at once */
#define QUICK_FAILS_MAX 5

struct box {
	struct fleet_info info;
	int pidfd;		   /* its daemon's, -1 for none */
	time_t started;		   /* when its daemon came up */
	unsigned quick_fails;	   /* ends right after a start, in a row */
	bool destroy_wanted;	   /* an rmdir came while it started */
	void (*done)(void *, int); /* of the rmdir that stops it */
	void *done_arg;
	TAILQ_ENTRY(box) link;
};

static struct fleet_config cfg;
static void (*changed_cb)(uint64_t serial);
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static TAILQ_HEAD(, box) boxes = TAILQ_HEAD_INITIALIZER(boxes);
static unsigned nboxes;
static uint64_t last_serial;
static char refusal[256]; /* the last create refused, and why */
static int epfd = -1, wake_fd = -1;
static pthread_t monitor;
static bool stopping;

static void start_box(struct box *b);
static void spawn_job(struct box *b, bool destroy);

bool fleet_id_valid(const char *id, size_t len)
{
	if (len == 0 || len > FLEET_ID_MAX || id[0] == '.')
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = id[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

const char *fleet_state_name(enum fleet_state st)
{
	static const char *const names[] = {
	    [FLEET_STARTING] = "starting",
	    [FLEET_RUNNING] = "running",
	    [FLEET_STOPPING] = "stopping",
	    [FLEET_FAILED] = "failed",
	};

	return names[st];
}

static char *box_path(const char *id, const char *what)
{
	return xasprintf("%s/sandboxes/%s%s%s", cfg.state_dir, id, what[0] ? "/" : "", what);
}

static char *mount_path(const char *id)
{
	return xasprintf("%s/%s/fs", cfg.root, id);
}

/* lock held */
static struct box *find(const char *id)
{
	struct box *b;

	TAILQ_FOREACH(b, &boxes, link)
	if (!strcmp(b->info.id, id))
		return b;
	return NULL;
}

static void notify(uint64_t serial)
{
	if (changed_cb)
		changed_cb(serial);
}

/* Runs argv to its end, its stdout discarded and its stderr's last line in why: its exit
 * status, or -errno. */
static int run(char *const argv[], char *why, size_t whylen, pid_t *spawned)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t sa;
	sigset_t none;
	int p[2], status, rc;
	char buf[4096], *last;
	size_t have = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDERR_FILENO);
	/* This thread blocks the stop signals (new_thread): the program gets them back. */
	sigemptyset(&none);
	posix_spawnattr_init(&sa);
	posix_spawnattr_setsigmask(&sa, &none);
	posix_spawnattr_setflags(&sa, POSIX_SPAWN_SETSIGMASK);
	rc = posix_spawn(&pid, argv[0], &fa, &sa, argv, environ);
	posix_spawnattr_destroy(&sa);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (rc != 0) {
		close(p[0]);
		snprintf(why, whylen, "%s: %s", argv[0], strerror(rc));
		return -rc;
	}
	if (spawned) {
		pthread_mutex_lock(&lock);
		*spawned = pid;
		pthread_mutex_unlock(&lock);
	}
	while ((n = read(p[0], buf + have, sizeof(buf) - 1 - have)) > 0) {
		have += (size_t)n;
		if (have == sizeof(buf) - 1) { /* keep the end */
			memmove(buf, buf + have / 2, have - have / 2);
			have -= have / 2;
		}
	}
	close(p[0]);
	buf[have] = '\0';
	while (have && buf[have - 1] == '\n')
		buf[--have] = '\0';
	last = strrchr(buf, '\n') ? strrchr(buf, '\n') + 1 : buf;
	snprintf(why, whylen, "%.*s", (int)(whylen - 1), last);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The daemon's pid from its pid file, or 0. */
static pid_t daemon_pid(const char *id)
{
	char *path = box_path(id, "state/sbxfs.pid");
	FILE *f = fopen(path, "re");
	long pid = 0;

	if (f && fscanf(f, "%ld", &pid) != 1)
		pid = 0;
	if (f)
		fclose(f);
	free(path);
	return (pid_t)pid;
}

/* Waits up to ms for the process of pidfd to end: true if it did. */
static bool wait_end(int pidfd, int ms)
{
	struct pollfd pfd = {.fd = pidfd, .events = POLLIN};

	return poll(&pfd, 1, ms) == 1;
}

/* Stops the daemon of pidfd: unmounted (sbxfs -u -z, a clean stop: it saves and ends its
 * processes) when it still has its mount point (id), else or then SIGTERM; SIGKILL after
 * STOP_WAIT_MS (its watchdog then cleans up). */
static void stop_daemon(int pidfd, const char *id)
{
	char *mnt = id ? mount_path(id) : NULL, why[256];
	char *argv[] = {(char *)cfg.sbxfs, "-u", "-z", mnt, NULL};

	if (!mnt || run(argv, why, sizeof(why), NULL) != 0)
		syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0);
	free(mnt);
	if (!wait_end(pidfd, STOP_WAIT_MS)) {
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		wait_end(pidfd, STOP_WAIT_MS);
	}
}

/* Whatever is still mounted on its mount point (a daemon that died): detached. */
static void clear_mount(const char *id)
{
	char *mnt = mount_path(id);

	for (int i = 0; i < 8 && umount2(mnt, MNT_DETACH) == 0; i++)
		;
	free(mnt);
}

struct job {
	struct box *b;
	bool destroy;
};

/* A start's thread: the daemon comes up, or the sandbox fails with the reason. */
static void *start_thread(void *arg)
{
	struct job *j = arg;
	struct box *b = j->b;
	char *ini = box_path(b->info.id, "sbxfs.ini"), *ws = box_path(b->info.id, "workspace"),
	     *st = box_path(b->info.id, "state"), *mnt = mount_path(b->info.id), why[256] = "";
	char *argv[] = {(char *)cfg.sbxfs, "-c", ini, "--workspace", ws,
			"--state-dir",	   st,	 mnt, NULL};
	int rc, pidfd = -1;
	pid_t pid = 0;

	clear_mount(b->info.id);
	rc = run(argv, why, sizeof(why), &b->info.starter);
	if (rc == 0 && ((pid = daemon_pid(b->info.id)) <= 0 ||
			(pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0)) {
		snprintf(why, sizeof(why), "its daemon started, but no pid of it is there");
		rc = -ESRCH;
	}
	pthread_mutex_lock(&lock);
	b->pidfd = pidfd;
	b->info.starter = 0;
	if (b->destroy_wanted) {
		b->info.state = FLEET_STOPPING;
		spawn_job(b, true);
	} else if (rc == 0) {
		b->info.state = FLEET_RUNNING;
		b->info.pid = pid;
		b->started = time(NULL);
		epoll_ctl(epfd, EPOLL_CTL_ADD, pidfd,
			  &(struct epoll_event){.events = EPOLLIN, .data.u64 = b->info.serial});
	} else {
		b->info.state = FLEET_FAILED;
		snprintf(b->info.reason, sizeof(b->info.reason), "%s",
			 why[0] ? why : "its daemon did not start");
		log_warnx("sandbox %s: %s", b->info.id, b->info.reason);
	}
	pthread_mutex_unlock(&lock);
	notify(b->info.serial);
	free(ini);
	free(ws);
	free(st);
	free(mnt);
	free(j);
	return NULL;
}

/* A destroy's thread: the daemon stopped, the files removed (rm, which follows no link and
 * stays on the sandbox's filesystem), then gone from the table. */
static void *destroy_thread(void *arg)
{
	struct job *j = arg;
	struct box *b = j->b;
	char *dir = box_path(b->info.id, ""), why[256] = "";
	char *argv[] = {"/bin/rm", "-rf", "--one-file-system", "--", dir, NULL};
	int rc;

	if (b->pidfd >= 0) {
		pthread_mutex_lock(&lock);
		epoll_ctl(epfd, EPOLL_CTL_DEL, b->pidfd, NULL);
		pthread_mutex_unlock(&lock);
		stop_daemon(b->pidfd, b->info.id);
		close(b->pidfd);
		b->pidfd = -1;
	}
	clear_mount(b->info.id);
	rc = run(argv, why, sizeof(why), NULL);
	if (rc != 0)
		log_warnx("sandbox %s: removing %s: %s", b->info.id, dir, why);
	pthread_mutex_lock(&lock);
	TAILQ_REMOVE(&boxes, b, link);
	nboxes--;
	pthread_mutex_unlock(&lock);
	log_info("sandbox %s destroyed", b->info.id);
	if (b->done)
		b->done(b->done_arg, rc == 0 ? 0 : -EIO);
	notify(b->info.serial);
	free(dir);
	free(b);
	free(j);
	return NULL;
}

/* A thread of the fleet's, with the stop signals blocked: they go to the FUSE loop's threads,
 * whose loop ends on them (one taken by another thread would end nothing). */
static int new_thread(pthread_t *t, bool detached, void *(*fn)(void *), void *arg)
{
	sigset_t stops, was;
	pthread_attr_t attr;
	int rc;

	sigemptyset(&stops);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stops, &was);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr,
				    detached ? PTHREAD_CREATE_DETACHED : PTHREAD_CREATE_JOINABLE);
	rc = pthread_create(t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	return rc;
}

static void spawn_job(struct box *b, bool destroy)
{
	struct job *j = xcalloc(1, sizeof(*j));
	pthread_t t;

	j->b = b;
	j->destroy = destroy;
	if (new_thread(&t, true, destroy ? destroy_thread : start_thread, j) != 0)
		fatal("starting a thread for sandbox %s", b->info.id);
}

/* lock held */
static void start_box(struct box *b)
{
	b->info.state = FLEET_STARTING;
	b->info.pid = 0;
	spawn_job(b, false);
}

/* A daemon ended: unless it was asked to, it is started again, and after QUICK_FAILS_MAX ends
 * right after their starts the sandbox is failed. lock held. */
static void daemon_ended(struct box *b)
{
	epoll_ctl(epfd, EPOLL_CTL_DEL, b->pidfd, NULL);
	close(b->pidfd);
	b->pidfd = -1;
	b->info.pid = 0;
	if (stopping)
		return;
	b->quick_fails = time(NULL) - b->started < QUICK_FAIL_S ? b->quick_fails + 1 : 0;
	if (b->quick_fails >= QUICK_FAILS_MAX) {
		b->info.state = FLEET_FAILED;
		snprintf(b->info.reason, sizeof(b->info.reason),
			 "its daemon ended %u times right after its start; see %s/sandboxes/%s/"
			 "state/sbxfs.log",
			 b->quick_fails, cfg.state_dir, b->info.id);
		return;
	}
	b->info.restarts++;
	snprintf(b->info.reason, sizeof(b->info.reason), "its daemon ended unasked: restarted");
	log_warnx("sandbox %s: its daemon ended unasked: starting it again", b->info.id);
	start_box(b);
}

static void *monitor_thread(void *arg)
{
	struct epoll_event ev[16];

	(void)arg;
	for (;;) {
		int n = epoll_wait(epfd, ev, 16, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fatal("epoll_wait");
		for (int i = 0; i < n; i++) {
			uint64_t serial = ev[i].data.u64;
			struct box *b;

			if (serial == 0) /* the shutdown */
				return NULL;
			pthread_mutex_lock(&lock);
			/* A destroy may have taken its pidfd since: then it is not ours. */
			TAILQ_FOREACH(b, &boxes, link)
			if (b->info.serial == serial)
				break;
			if (b && b->pidfd >= 0 && b->info.state == FLEET_RUNNING)
				daemon_ended(b);
			pthread_mutex_unlock(&lock);
			notify(serial);
		}
	}
}

/* lock held */
static struct box *add_box(const char *id)
{
	struct box *b = xcalloc(1, sizeof(*b));

	snprintf(b->info.id, sizeof(b->info.id), "%s", id);
	b->info.serial = ++last_serial;
	b->pidfd = -1;
	TAILQ_INSERT_TAIL(&boxes, b, link);
	nboxes++;
	return b;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600), rc = 0;
	size_t len = strlen(text);

	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		rc = errno ? -errno : -EIO;
	close(fd);
	return rc;
}

/* Its files: workspace/, state/ and the config it starts with. */
static int make_files(const char *id)
{
	char *dir = box_path(id, ""), *ws = box_path(id, "workspace"), *st = box_path(id, "state"),
	     *ini = box_path(id, "sbxfs.ini"), *text = NULL;
	size_t len = 0;
	int rc = 0;

	if (cfg.sandbox_config[0]) {
		FILE *f = fopen(cfg.sandbox_config, "re");

		if (!f || getdelim(&text, &len, '\0', f) < 0)
			rc = -errno;
		if (f)
			fclose(f);
	}
	if (rc == 0 && mkdir(dir, 0700) < 0)
		rc = -errno;
	else if (rc == 0 && (mkdir(ws, 0755) < 0 || mkdir(st, 0700) < 0))
		rc = -errno;
	else if (rc == 0)
		rc = write_file(ini, text ? text : "");
	free(text);
	free(dir);
	free(ws);
	free(st);
	free(ini);
	return rc;
}

int fleet_create(const char *id, char *why, size_t whylen)
{
	struct box *b;
	int rc;

	if (!fleet_id_valid(id, strlen(id)))
		return -EINVAL;
	pthread_mutex_lock(&lock);
	if (find(id)) {
		pthread_mutex_unlock(&lock);
		return -EEXIST;
	}
	if (nboxes >= cfg.max) {
		snprintf(why, whylen, "%u sandboxes, [fleet] max is %u", nboxes, cfg.max);
		snprintf(refusal, sizeof(refusal), "%s not created: %s", id, why);
		pthread_mutex_unlock(&lock);
		return -ENOSPC;
	}
	if ((rc = make_files(id)) < 0) {
		snprintf(why, whylen, "its files in %s/sandboxes: %s", cfg.state_dir,
			 strerror(-rc));
		pthread_mutex_unlock(&lock);
		return rc == -EEXIST ? -EIO : rc; /* not in the table, yet its files are there */
	}
	b = add_box(id);
	start_box(b);
	pthread_mutex_unlock(&lock);
	log_info("sandbox %s created", id);
	return 0;
}

int fleet_clone(char *id, size_t idlen, char *why, size_t whylen)
{
	static unsigned counter;
	int rc;

	do {
		pthread_mutex_lock(&lock);
		snprintf(id, idlen, "s%u", ++counter);
		pthread_mutex_unlock(&lock);
	} while ((rc = fleet_create(id, why, whylen)) == -EEXIST || rc == -EIO);
	return rc;
}

int fleet_destroy(const char *id, void (*done)(void *arg, int result), void *arg)
{
	struct box *b;

	pthread_mutex_lock(&lock);
	b = find(id);
	if (!b || b->info.state == FLEET_STOPPING) {
		pthread_mutex_unlock(&lock);
		return b ? -EBUSY : -ENOENT;
	}
	b->done = done;
	b->done_arg = arg;
	if (b->info.state == FLEET_STARTING) { /* its start's thread goes on with the destroy */
		b->destroy_wanted = true;
	} else {
		b->info.state = FLEET_STOPPING;
		spawn_job(b, true);
	}
	pthread_mutex_unlock(&lock);
	return 0;
}

static int get(bool (*match)(const struct box *, const void *), const void *key,
	       struct fleet_info *out)
{
	struct box *b;
	int rc = -ENOENT;

	pthread_mutex_lock(&lock);
	TAILQ_FOREACH(b, &boxes, link)
	if (match(b, key)) {
		*out = b->info;
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

static bool by_id(const struct box *b, const void *key)
{
	return !strcmp(b->info.id, key);
}

static bool by_serial(const struct box *b, const void *key)
{
	return b->info.serial == *(const uint64_t *)key;
}

int fleet_get(const char *id, struct fleet_info *out)
{
	return get(by_id, id, out);
}

int fleet_get_serial(uint64_t serial, struct fleet_info *out)
{
	return get(by_serial, &serial, out);
}

static int info_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fleet_info *)a)->id, ((const struct fleet_info *)b)->id);
}

size_t fleet_list(struct fleet_info **v)
{
	struct box *b;
	size_t n = 0;

	pthread_mutex_lock(&lock);
	*v = xcalloc(nboxes + 1, sizeof(**v));
	TAILQ_FOREACH(b, &boxes, link)
	(*v)[n++] = b->info;
	pthread_mutex_unlock(&lock);
	qsort(*v, n, sizeof(**v), info_cmp);
	return n;
}

char *fleet_status(size_t *len)
{
	unsigned by_state[4] = {0};
	struct box *b;
	char *text;

	pthread_mutex_lock(&lock);
	TAILQ_FOREACH(b, &boxes, link)
	by_state[b->info.state]++;
	text =
	    xasprintf("sandboxes %u\nmax %u\nrunning %u\nstarting %u\nstopping %u\nfailed %u\n"
		      "refused %s\n",
		      nboxes, cfg.max, by_state[FLEET_RUNNING], by_state[FLEET_STARTING],
		      by_state[FLEET_STOPPING], by_state[FLEET_FAILED], refusal[0] ? refusal : "-");
	pthread_mutex_unlock(&lock);
	*len = strlen(text);
	return text;
}

/* A daemon a supervisor that died left running on a sandbox of ours: stopped, so that this
 * supervisor starts its own. Only a process whose program is sbxfs counts. */
static void stop_stale(const char *id)
{
	pid_t pid = daemon_pid(id);
	char *exe = pid > 0 ? xasprintf("/proc/%d/exe", (int)pid) : NULL, *prog;
	int pidfd;

	if (!exe)
		return;
	prog = realpath(exe, NULL);
	if (prog && !strcmp(prog, cfg.sbxfs) &&
	    (pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) >= 0) {
		log_warnx("sandbox %s: stopping the daemon (%d) a supervisor before left", id,
			  (int)pid);
		stop_daemon(pidfd, NULL);
		close(pidfd);
	}
	free(prog);
	free(exe);
}

/* Calls fn with the id of each sandbox there is. */
static void scan(void (*fn)(const char *id))
{
	char *dir = xasprintf("%s/sandboxes", cfg.state_dir);
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d)))
		if (fleet_id_valid(de->d_name, strlen(de->d_name)) && de->d_type == DT_DIR)
			fn(de->d_name);
	if (d)
		closedir(d);
	free(dir);
}

static void start_found(const char *id)
{
	pthread_mutex_lock(&lock);
	start_box(add_box(id));
	pthread_mutex_unlock(&lock);
}

void fleet_start(void)
{
	scan(start_found);
}

int fleet_init(const struct fleet_config *c, void (*changed)(uint64_t serial), char *err,
	       size_t errlen)
{
	char *dir;

	cfg = *c;
	changed_cb = changed;
	dir = xasprintf("%s/sandboxes", cfg.state_dir);
	if ((mkdir(cfg.state_dir, 0700) < 0 && errno != EEXIST) ||
	    (mkdir(dir, 0700) < 0 && errno != EEXIST)) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		free(dir);
		return -errno;
	}
	free(dir);
	if ((epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 || (wake_fd = eventfd(0, EFD_CLOEXEC)) < 0 ||
	    epoll_ctl(epfd, EPOLL_CTL_ADD, wake_fd,
		      &(struct epoll_event){.events = EPOLLIN, .data.u64 = 0}) < 0 ||
	    new_thread(&monitor, false, monitor_thread, NULL) != 0) {
		snprintf(err, errlen, "the fleet's monitor: %s", strerror(errno));
		return -errno;
	}
	scan(stop_stale);
	return 0;
}

static int ms_until(const struct timespec *deadline)
{
	struct timespec now;
	long long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (deadline->tv_sec - now.tv_sec) * 1000LL + (deadline->tv_nsec - now.tv_nsec) / 1000000;
	return ms > 0 ? (int)ms : 0;
}

void fleet_shutdown(void)
{
	struct timespec deadline;
	struct box *b;

	pthread_mutex_lock(&lock);
	stopping = true;
	pthread_mutex_unlock(&lock);
	eventfd_write(wake_fd, 1);
	pthread_join(monitor, NULL);
	/* No start or destroy thread is waited for: the process ends. What they began, the
	 * next supervisor finds (a stale daemon it stops, files it removes on the next rmdir). */
	pthread_mutex_lock(&lock);
	TAILQ_FOREACH(b, &boxes, link)
	if (b->pidfd >= 0)
		syscall(SYS_pidfd_send_signal, b->pidfd, SIGTERM, NULL, 0);
	/* All stop at once: one deadline for them all, then SIGKILL (their watchdogs clean up). */
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += SHUTDOWN_WAIT_S;
	TAILQ_FOREACH(b, &boxes, link)
	if (b->pidfd >= 0 && !wait_end(b->pidfd, ms_until(&deadline)))
		syscall(SYS_pidfd_send_signal, b->pidfd, SIGKILL, NULL, 0);
	pthread_mutex_unlock(&lock);
}
