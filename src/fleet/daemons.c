/* The daemons of a fleet's sandboxes (fleet_priv.h): starting one, stopping one, and the
 * monitor thread that hears when one ends.
 *
 * A sandbox's daemon is a plain sbxfs started without -f: the starting process exits 0 once
 * ROOT/ID/fs answers (else 1 with the reason on its stderr), and the daemon's pid is then in
 * state/sbxfs.pid. A pidfd per daemon tells the monitor when one ends: unless it was asked to,
 * it is started again (what outlives a daemon comes back, saved.h), and one that keeps ending
 * right after its start is failed. One that stopped itself once idle left state/slept: its
 * sandbox sleeps until fleet_wake. Starting and stopping run on a thread each, so that the
 * FUSE side never waits on a daemon. */
#include "fleet_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "xmalloc.h"

extern char **environ;

#define STOP_WAIT_MS	10000
#define SHUTDOWN_WAIT_S 30
/* A killed daemon's watchdog: its kills and cgroups, a few seconds under load. */
#define CLEANUP_WAIT_S	10
#define QUICK_FAIL_S	5 /* a daemon that ends this soon after its start failed at once */
#define QUICK_FAILS_MAX 5

static void (*changed_cb)(uint64_t serial);
static int epfd = -1, wake_fd = -1;
static pthread_t monitor;
static bool stopping;
/* Start and destroy threads under way: a shutdown waits for them, so that no daemon starts
 * after it signalled the others. fleet_lock. */
static unsigned jobs;
static pthread_cond_t jobs_done = PTHREAD_COND_INITIALIZER;

static void spawn_job(struct box *b, bool destroy);

char *box_path(const char *id, const char *what)
{
	return xasprintf("%s/sandboxes/%s%s%s", fleet_cfg.state_dir, id, what[0] ? "/" : "", what);
}

static char *mount_path(const char *id)
{
	return xasprintf("%s/%s/fs", fleet_cfg.root, id);
}

static void notify(uint64_t serial)
{
	if (changed_cb)
		changed_cb(serial);
}

/* In child(): `what: ERRNO` on err, the start's reason, then exit 127. */
static void __attribute__((noreturn)) child_failed(int err, const char *what, int e)
{
	const char *name = strerrorname_np(e) ? strerrorname_np(e) : "failed";

	(void)!writev(
	    err,
	    (struct iovec[]){
		{(char *)what, strlen(what)}, {": ", 2}, {(char *)name, strlen(name)}, {"\n", 1}},
	    4);
	_exit(127);
}

/* The child of spawn(): once the gate gives its byte (its parent knows its pid by then), argv
 * with stdin and stdout on /dev/null and stderr on err. A byte, not the gate's end: a child of
 * another start may hold the write end until its own exec. Async-signal-safe calls only: the
 * fleet has threads. */
static void __attribute__((noreturn)) child(char *const argv[], const int gate[2], int err)
{
	sigset_t none;
	ssize_t n;
	char c;
	int null;

	close(gate[1]);
	while ((n = read(gate[0], &c, 1)) < 0 && errno == EINTR)
		;
	if (n != 1)
		_exit(127); /* the fleet went first: nobody reads a reason */
	if ((null = open("/dev/null", O_RDWR)) < 0 || dup2(null, STDIN_FILENO) < 0 ||
	    dup2(null, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0)
		child_failed(err, "/dev/null", errno);
	/* This thread blocks the stop signals (new_thread): the program gets them back. */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(argv[0], argv, environ);
	child_failed(err, argv[0], errno);
}

/* Starts argv (child()) with its stderr on the pipe's end err; *spawned, under fleet_lock, is
 * its pid before it runs: a start's mount asks fleetfs about fs/ as soon as it can, and fleetfs
 * knows it for the starter's by that pid alone. */
static int spawn(char *const argv[], int err, pid_t *spawned)
{
	int gate[2];
	pid_t pid;

	if (pipe2(gate, O_CLOEXEC) < 0)
		return -errno;
	if ((pid = fork()) < 0) {
		int rc = -errno;

		close(gate[0]);
		close(gate[1]);
		return rc;
	}
	if (pid == 0)
		child(argv, gate, err);
	close(gate[0]);
	if (spawned) {
		pthread_mutex_lock(&fleet_lock);
		*spawned = pid;
		pthread_mutex_unlock(&fleet_lock);
	}
	while (write(gate[1], "", 1) < 0 && errno == EINTR)
		;
	close(gate[1]);
	return pid;
}

/* Runs argv to its end, its stdout discarded and its stderr's last line in why: its exit
 * status, or -errno. */
static int run(char *const argv[], char *why, size_t whylen, pid_t *spawned)
{
	int p[2], status;
	char buf[4096], *last;
	size_t have = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = spawn(argv, p[1], spawned);
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		snprintf(why, whylen, "%s: %s", argv[0], strerror(-pid));
		return pid;
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

/* Waits up to ms for the state dir's lock of sandbox id to be free: a daemon killed leaves it
 * to its watchdog, which holds it until its cleanup is done. True if it is free. */
static bool wait_cleaned(const char *id, int ms)
{
	char *path = box_path(id, "state/lock");
	int fd = open(path, O_RDONLY | O_CLOEXEC), waited = 0;
	bool free_now = true;

	free(path);
	if (fd < 0)
		return true;
	while (!(free_now = flock(fd, LOCK_SH | LOCK_NB) == 0) && errno == EWOULDBLOCK &&
	       waited < ms) {
		usleep(10000);
		waited += 10;
	}
	close(fd);
	return free_now;
}

/* Stops the daemon of pidfd: unmounted (sbxfs -u -z, a clean stop: it saves and ends its
 * processes) when it still has its mount point (id), else or then SIGTERM; SIGKILL after
 * STOP_WAIT_MS (its watchdog then cleans up). */
static void stop_daemon(int pidfd, const char *id)
{
	char *mnt = id ? mount_path(id) : NULL, why[256];
	char *argv[] = {(char *)fleet_cfg.sbxfs, "-u", "-z", mnt, NULL};

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

/* At the end of a job's thread. */
static void job_done(void)
{
	pthread_mutex_lock(&fleet_lock);
	if (--jobs == 0)
		pthread_cond_broadcast(&jobs_done);
	pthread_mutex_unlock(&fleet_lock);
}

/* A start's thread: the daemon comes up, or the sandbox fails with the reason. */
static void *start_thread(void *arg)
{
	struct job *j = arg;
	struct box *b = j->b;
	char *ini = box_path(b->info.id, "sbxfs.ini"), *ws = box_path(b->info.id, "workspace"),
	     *st = box_path(b->info.id, "state"), *mnt = mount_path(b->info.id), why[256] = "";
	char *argv[] = {(char *)fleet_cfg.sbxfs, "-c", ini, "--workspace", ws,
			"--state-dir",		 st,   mnt, NULL};
	char *slept = box_path(b->info.id, "state/slept");
	int rc, pidfd = -1;
	pid_t pid = 0;

	clear_mount(b->info.id);
	unlink(slept); /* from here on, an end is a crash unless the daemon slept again */
	free(slept);
	rc = run(argv, why, sizeof(why), &b->info.starter);
	if (rc == 0 && ((pid = daemon_pid(b->info.id)) <= 0 ||
			(pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0)) {
		snprintf(why, sizeof(why), "its daemon started, but no pid of it is there");
		rc = -ESRCH;
	}
	pthread_mutex_lock(&fleet_lock);
	b->pidfd = pidfd;
	b->info.starter = 0;
	if (b->destroy_wanted) {
		b->info.state = FLEET_STOPPING;
		spawn_job(b, true);
	} else if (rc == 0) {
		/* A new config came while it started: it starts again with it (options.c). */
		b->info.state = b->reconfigure ? FLEET_STARTING : FLEET_RUNNING;
		b->info.pid = pid;
		b->started = time(NULL);
		epoll_ctl(epfd, EPOLL_CTL_ADD, pidfd,
			  &(struct epoll_event){.events = EPOLLIN, .data.u64 = b->info.serial});
		if (b->reconfigure)
			syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0);
	} else {
		b->info.state = FLEET_FAILED;
		b->reconfigure = false; /* a config written now starts it (options.c) */
		snprintf(b->info.reason, sizeof(b->info.reason), "%s",
			 why[0] ? why : "its daemon did not start");
		log_warnx("sandbox %s: %s", b->info.id, b->info.reason);
	}
	pthread_mutex_unlock(&fleet_lock);
	notify(b->info.serial);
	free(ini);
	free(ws);
	free(st);
	free(mnt);
	free(j);
	job_done();
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
		pthread_mutex_lock(&fleet_lock);
		epoll_ctl(epfd, EPOLL_CTL_DEL, b->pidfd, NULL);
		pthread_mutex_unlock(&fleet_lock);
		stop_daemon(b->pidfd, b->info.id);
		close(b->pidfd);
		b->pidfd = -1;
	}
	/* Not under the feet of a killed daemon's watchdog, still cleaning up in there. */
	wait_cleaned(b->info.id, STOP_WAIT_MS);
	clear_mount(b->info.id);
	rc = run(argv, why, sizeof(why), NULL);
	if (rc != 0)
		log_warnx("sandbox %s: removing %s: %s", b->info.id, dir, why);
	pthread_mutex_lock(&fleet_lock);
	TAILQ_REMOVE(&fleet_boxes, b, link);
	fleet_nboxes--;
	pthread_mutex_unlock(&fleet_lock);
	log_info("sandbox %s destroyed", b->info.id);
	if (b->done)
		b->done(b->done_arg, rc == 0 ? 0 : -EIO);
	notify(b->info.serial);
	free(dir);
	free(b);
	free(j);
	job_done();
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
	jobs++;
	if (new_thread(&t, true, destroy ? destroy_thread : start_thread, j) != 0)
		fatal("starting a thread for sandbox %s", b->info.id);
}

/* lock held */
void box_start(struct box *b)
{
	b->info.state = FLEET_STARTING;
	b->info.pid = 0;
	spawn_job(b, false);
}

/* Whether its daemon ended because it slept: it left state/slept (idle.h). */
static bool slept(const struct box *b)
{
	char *path = box_path(b->info.id, "state/slept");
	bool yes = access(path, F_OK) == 0;

	free(path);
	return yes;
}

/* A daemon ended: unless it was asked to or it slept, it is started again, and after
 * QUICK_FAILS_MAX ends right after their starts the sandbox is failed. lock held. */
static void daemon_ended(struct box *b)
{
	epoll_ctl(epfd, EPOLL_CTL_DEL, b->pidfd, NULL);
	close(b->pidfd);
	b->pidfd = -1;
	b->info.pid = 0;
	if (stopping)
		return;
	if (b->reconfigure) {
		b->reconfigure = false;
		b->quick_fails = 0;
		log_info("sandbox %s: starting again with its new config", b->info.id);
		box_start(b);
		return;
	}
	if (slept(b)) {
		b->info.state = FLEET_SLEEPING;
		b->quick_fails = 0;
		clear_mount(b->info.id); /* what its daemon left: a use must reach this tree */
		log_info("sandbox %s: sleeping", b->info.id);
		return;
	}
	b->quick_fails = time(NULL) - b->started < QUICK_FAIL_S ? b->quick_fails + 1 : 0;
	if (b->quick_fails >= QUICK_FAILS_MAX) {
		b->info.state = FLEET_FAILED;
		snprintf(b->info.reason, sizeof(b->info.reason),
			 "its daemon ended %u times right after its start; see %s/sandboxes/%s/"
			 "state/sbxfs.log",
			 b->quick_fails, fleet_cfg.state_dir, b->info.id);
		return;
	}
	b->info.restarts++;
	snprintf(b->info.reason, sizeof(b->info.reason), "its daemon ended unasked: restarted");
	log_warnx("sandbox %s: its daemon ended unasked: starting it again", b->info.id);
	box_start(b);
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
			pthread_mutex_lock(&fleet_lock);
			/* A destroy may have taken its pidfd since: then it is not ours. */
			TAILQ_FOREACH(b, &fleet_boxes, link)
			if (b->info.serial == serial)
				break;
			if (b && b->pidfd >= 0 &&
			    (b->info.state == FLEET_RUNNING || b->reconfigure))
				daemon_ended(b);
			pthread_mutex_unlock(&fleet_lock);
			notify(serial);
		}
	}
}

int daemons_init(void (*changed)(uint64_t serial), char *err, size_t errlen)
{
	changed_cb = changed;
	if ((epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 || (wake_fd = eventfd(0, EFD_CLOEXEC)) < 0 ||
	    epoll_ctl(epfd, EPOLL_CTL_ADD, wake_fd,
		      &(struct epoll_event){.events = EPOLLIN, .data.u64 = 0}) < 0 ||
	    new_thread(&monitor, false, monitor_thread, NULL) != 0) {
		snprintf(err, errlen, "the fleet's monitor: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

void box_destroy(struct box *b)
{
	spawn_job(b, true);
}

/* A daemon a supervisor that died left running on a sandbox of ours: stopped, so that this
 * supervisor starts its own. Only a process whose program is sbxfs counts. */
void daemon_stop_stale(const char *id)
{
	pid_t pid = daemon_pid(id);
	char *exe = pid > 0 ? xasprintf("/proc/%d/exe", (int)pid) : NULL, *prog;
	int pidfd;

	if (!exe)
		return;
	prog = realpath(exe, NULL);
	if (prog && !strcmp(prog, fleet_cfg.sbxfs) &&
	    (pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) >= 0) {
		log_warnx("sandbox %s: stopping the daemon (%d) a supervisor before left", id,
			  (int)pid);
		stop_daemon(pidfd, NULL);
		close(pidfd);
		wait_cleaned(id, STOP_WAIT_MS);
	}
	free(prog);
	free(exe);
}

static int ms_until(const struct timespec *deadline)
{
	struct timespec now;
	long long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (deadline->tv_sec - now.tv_sec) * 1000LL + (deadline->tv_nsec - now.tv_nsec) / 1000000;
	return ms > 0 ? (int)ms : 0;
}

void daemons_shutdown(void)
{
	struct timespec deadline;
	struct box *b;

	pthread_mutex_lock(&fleet_lock);
	stopping = true;
	pthread_mutex_unlock(&fleet_lock);
	eventfd_write(wake_fd, 1);
	pthread_join(monitor, NULL);
	/* The starts and destroys under way end first (a start's daemon is then signalled with
	 * the others); one that takes past the deadline is left to the next supervisor, which
	 * stops a daemon it finds. */
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += SHUTDOWN_WAIT_S;
	pthread_mutex_lock(&fleet_lock);
	while (jobs && pthread_cond_timedwait(&jobs_done, &fleet_lock, &deadline) == 0)
		;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += SHUTDOWN_WAIT_S;
	TAILQ_FOREACH(b, &fleet_boxes, link)
	if (b->pidfd >= 0)
		syscall(SYS_pidfd_send_signal, b->pidfd, SIGTERM, NULL, 0);
	/* All stop at once: one deadline for them all, then SIGKILL (their watchdogs clean up). */
	TAILQ_FOREACH(b, &fleet_boxes, link)
	if (b->pidfd >= 0 && !wait_end(b->pidfd, ms_until(&deadline)))
		syscall(SYS_pidfd_send_signal, b->pidfd, SIGKILL, NULL, 0);
	/* The supervisor ends when nothing of its daemons is left: a killed one's watchdog has
	 * cleaned up (a stopped one's ended with it). */
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += CLEANUP_WAIT_S;
	TAILQ_FOREACH(b, &fleet_boxes, link)
	if (!wait_cleaned(b->info.id, ms_until(&deadline)))
		log_warnx("sandbox %s: its daemon's cleanup is still under way", b->info.id);
	pthread_mutex_unlock(&fleet_lock);
}
