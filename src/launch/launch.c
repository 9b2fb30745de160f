/* The launcher's life on the daemon's side: starts sbxfs-launcher (launch_exec.c), reaps every
 * child of the daemon (it is a child subreaper), and restarts the launcher if it dies, failing
 * the processes it had (its messages are launch_msg.c's): at once after a stable run, else with
 * backoff (backoff.h), logging once per streak of failures. */
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backoff.h"
#include "cgroup.h"
#include "errlog.h"
#include "filter.h"
#include "launch_priv.h"
#include "log.h"
#include "loop.h"
#include "xmalloc.h"

static struct launch_spec spec;
pid_t launch_pid;
static int err_pipe = -1; /* until the launcher is up; then errlog.c owns it */
int launch_sock = -1;
static struct backoff restarts;
static bool failed_start; /* the last launcher never said hello */
static struct loop_timer restart_timer;
static bool stopping; /* core lock: the daemon is stopping; a dead launcher stays dead */

/* The seccomp filter protects the launcher and its stdin holder by their pids. */
bool launch_up(void)
{
	return restarts.up;
}

void launch_hello(pid_t launcher, pid_t holder)
{
	static bool warned;

	if (restarts.up)
		return;
	if (restarts.streak > 1)
		log_warnx("the launcher is up again, after %u failed starts", restarts.streak - 1);
	backoff_up(&restarts);
	if (spec.bwrap_argv)
		launch_netns_open(launch_pid);
	if (spec.bwrap_argv && !warned &&
	    (launcher != FILTER_LAUNCHER_PID || holder != FILTER_HOLDER_PID)) {
		log_warnx("the launcher runs as pid %d and its holder as %d, not %d and %d: "
			  "commands can signal them",
			  (int)launcher, (int)holder, FILTER_LAUNCHER_PID, FILTER_HOLDER_PID);
		warned = true;
	}
}

static int spawn_launcher(void)
{
	int rc = launch_exec_fork(&spec, &launch_sock, &err_pipe, &launch_pid);

	if (rc < 0)
		return rc;
	fcntl(launch_sock, F_SETFL, O_NONBLOCK);
	errlog_detach();
	return 0;
}

static void watch_launcher(void)
{
	launch_msg_watch();
	errlog_attach(err_pipe);
	err_pipe = -1;
}

/* A launcher that cannot be restarted now (descriptors, memory) is tried again at the next
 * start, and the starts meanwhile fail with the reason. */
static int respawn(void)
{
	int rc = spawn_launcher();

	if (rc < 0) {
		log_warnx("cannot restart the launcher: %s", strerror(-rc));
		return rc;
	}
	backoff_started(&restarts, loop_now_ns());
	watch_launcher();
	launch_msg_flush();
	return 0;
}

int launch_revive(void)
{
	return restart_timer.armed ? 0 : respawn();
}

static void restart(struct loop_timer *t)
{
	(void)t;
	if (failed_start && spec.repair)
		spec.repair();
	if (respawn() < 0)
		failed_start = false;
}

static void schedule_restart(int status)
{
	bool new_streak;
	uint64_t ms;

	failed_start = !restarts.up;
	ms = backoff_died(&restarts, loop_now_ns(), &new_streak);
	if (new_streak)
		log_warnx("the launcher died (wait status %d); restarting it", status);
	restart_timer.fn = restart;
	loop_timer_arm(&restart_timer, ms);
}

bool launch_failing(void)
{
	return backoff_failing(&restarts);
}

static void launcher_died(int status)
{
	launch_msg_disconnect();
	launch_netns_close();
	/* What it started dies with it: with bwrap, its pid namespace goes; else we kill the
	 * sandbox's groups. Never by the pids it reported: sandboxed code can control the
	 * launcher (same user) and lie about them. */
	cgroup_kill_all();
	launch_msg_fail_all();
	/* While the daemon stops, its death is expected: the shutdown itself, or a signal to
	 * every process of the service (systemd's stop of its control group). */
	if (!stopping)
		schedule_restart(status);
}

struct child_watch {
	pid_t pid;
	void (*cb)(void *arg, int status);
	void *arg;
	TAILQ_ENTRY(child_watch) link;
};

static TAILQ_HEAD(, child_watch) watches = TAILQ_HEAD_INITIALIZER(watches);

void launch_watch_child(pid_t pid, void (*cb)(void *arg, int status), void *arg)
{
	struct child_watch *w = xcalloc(1, sizeof(*w));

	*w = (struct child_watch){.pid = pid, .cb = cb, .arg = arg};
	TAILQ_INSERT_TAIL(&watches, w, link);
}

static void child_exited(pid_t pid, int status)
{
	struct child_watch *w;

	TAILQ_FOREACH(w, &watches, link) {
		if (w->pid == pid) {
			TAILQ_REMOVE(&watches, w, link);
			w->cb(w->arg, status);
			free(w);
			return;
		}
	}
}

static void on_sigchld(void)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid == launch_pid)
			launcher_died(status);
		else
			child_exited(pid, status);
	}
}

int launch_init(const struct launch_spec *sp, char *err, size_t errlen)
{
	int rc;

	spec = *sp;
	if (access(spec.launcher, X_OK) < 0) {
		rc = -errno;
		snprintf(err, errlen, "launcher %s: %s", spec.launcher, strerror(-rc));
		return rc;
	}
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	loop_set_sigchld(on_sigchld);
	if ((rc = spawn_launcher()) < 0) {
		snprintf(err, errlen, "cannot start the launcher: %s", strerror(-rc));
		return rc;
	}
	if ((rc = launch_exec_await_hello(launch_sock, err_pipe, launch_pid, err, errlen)) < 0)
		return rc;
	backoff_started(&restarts, loop_now_ns());
	watch_launcher();
	return 0;
}

void launch_stopping(void)
{
	core_lock();
	stopping = true;
	loop_timer_cancel(&restart_timer);
	core_unlock();
}

void launch_shutdown(void)
{
	struct timespec ts = {0, 10 * 1000 * 1000};
	int status;

	loop_timer_cancel(&restart_timer);
	launch_netns_close();
	if (launch_sock < 0)
		return;
	shutdown(launch_sock, SHUT_RDWR);
	for (int i = 0; i < 500; i++) {
		pid_t pid = waitpid(launch_pid, &status, WNOHANG);

		if (pid == launch_pid || (pid < 0 && errno == ECHILD))
			return;
		nanosleep(&ts, NULL);
	}
	log_warnx("the launcher did not exit; killing it");
	kill(launch_pid, SIGKILL);
	waitpid(launch_pid, &status, 0);
}

void launch_reap_all(void)
{
	struct timespec ts = {0, 1000 * 1000};

	/* About a second: bwrap's pid 1 ends a moment after its parent (--die-with-parent). */
	for (int i = 0; i < 1000; i++) {
		pid_t pid = waitpid(-1, NULL, WNOHANG);

		if (pid < 0 && errno != EINTR)
			return; /* ECHILD: none left */
		if (pid == 0)
			nanosleep(&ts, NULL);
	}
	log_warnx("children of the daemon still running at its exit");
}
