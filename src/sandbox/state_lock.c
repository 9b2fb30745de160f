/* The state dir's lock (see state_lock.h): an flock on STATE_DIR/lock, whose content is the
 * holder's pid, followed by " stopping" once it is on its way out. */
#include "state_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "xmalloc.h"

/* A daemon that said it is stopping: how long it may take (its sessions' kills, the launcher's
 * bounded exit) before the new mount gives up. */
#define STOPPING_WAIT_MS 25000
/* A holder that said nothing: an unmount by umount(8) or fusermount3 reaches the daemon a
 * moment before it says it is stopping. */
#define SILENT_WAIT_MS 1000
#define POLL_MS	       10

static int lock_fd = -1;

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* What the lock file says of its holder: its pid (0 if unknown) and whether it is stopping. */
static void read_holder(int fd, long *pid, bool *stopping)
{
	char buf[64], *end;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
	*pid = strtol(buf, &end, 10);
	if (end == buf || *pid < 0)
		*pid = 0;
	*stopping = strncmp(end, " stopping", 9) == 0;
}

static void record(const char *state)
{
	char buf[64];
	int len = snprintf(buf, sizeof(buf), "%d%s\n", (int)getpid(), state);

	if (lock_fd < 0)
		return;
	if (pwrite(lock_fd, buf, (size_t)len, 0) != len || ftruncate(lock_fd, len) < 0)
		log_warn("state dir lock: recording the daemon's state");
}

int state_lock_take(const char *state_dir, char *err, size_t errlen)
{
	char *path = xasprintf("%s/lock", state_dir);
	const struct timespec poll = {0, POLL_MS * 1000000L};
	long start = now_ms(), limit = SILENT_WAIT_MS, pid;
	bool stopping = false;
	int rc;

	lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	free(path);
	if (lock_fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "state dir %s: %s", state_dir, strerror(-rc));
		return rc;
	}
	while (flock(lock_fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK) {
			rc = -errno;
			snprintf(err, errlen, "state dir %s: lock: %s", state_dir, strerror(-rc));
			state_lock_release();
			return rc;
		}
		read_holder(lock_fd, &pid, &stopping);
		/* A holder whose daemon died is its watchdog, cleaning up after it (it shares the
		 * lock): a stop under way, however slow its kills and cgroups are. */
		if (!stopping && pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			stopping = true;
		if (stopping && limit == SILENT_WAIT_MS) {
			log_info(
			    "state dir %s: the sbxfs that used it (pid %ld) is still stopping; "
			    "waiting for it",
			    state_dir, pid);
			limit = STOPPING_WAIT_MS;
		}
		if (now_ms() - start >= limit) {
			char who[32] = "";

			if (pid)
				snprintf(who, sizeof(who), " (pid %ld)", pid);
			if (stopping)
				snprintf(err, errlen,
					 "state dir %s: the sbxfs that used it%s is still stopping "
					 "after %ld s",
					 state_dir, who, limit / 1000);
			else
				snprintf(
				    err, errlen,
				    "state dir %s: in use by another sbxfs%s; each mount needs "
				    "its own (--state-dir DIR)",
				    state_dir, who);
			state_lock_release();
			return -EBUSY;
		}
		nanosleep(&poll, NULL);
	}
	/* What the last holder left ("PID stopping") is stale from now on. */
	record("");
	return 0;
}

void state_lock_running(void)
{
	record("");
}

void state_lock_stopping(void)
{
	record(" stopping");
}

int state_lock_fd(void)
{
	return lock_fd;
}

void state_lock_release(void)
{
	if (lock_fd >= 0)
		close(lock_fd);
	lock_fd = -1;
}
