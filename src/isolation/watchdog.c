/* The watchdog (see watchdog.h): a forked child that holds the read end of a pipe the daemon
 * keeps open. EOF without the "clean" byte means the daemon died. */
#include "watchdog.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"

/* A disarmed watchdog ends at once; a daemon that ends waits that long for it, so that when
 * its pid is gone nothing of it is left (a supervisor or a test may look right then). */
#define DISARM_WAIT_MS 5000

static int pipe_w = -1;
static int watchdog_pidfd = -1;

static void __attribute__((noreturn)) watch(int fd, void (*cleanup)(void))
{
	sigset_t all;
	char c = 0;
	ssize_t n;

	/* No signal from the terminal or the daemon's group may end it before its job. */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	setsid();
	while ((n = read(fd, &c, 1)) < 0 && errno == EINTR)
		;
	if (n == 1 && c == 'c')
		_exit(0);
	cleanup();
	_exit(0);
}

int watchdog_start(void (*cleanup)(void), int keep_fd)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		/* Holding /dev/fuse, the launcher's socket, or whatever pipe a caller reads our
		 * output from would keep them alive; stderr stays for the log. */
		if (dup2(p[0], 3) < 0 || null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
		    (keep_fd >= 0 && dup2(keep_fd, 4) < 0))
			_exit(1);
		close_range(keep_fd >= 0 ? 5 : 4, ~0U, 0);
		watch(3, cleanup);
	}
	close(p[0]);
	pipe_w = p[1];
	watchdog_pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	return 0;
}

void watchdog_disarm(void)
{
	if (pipe_w < 0)
		return;
	if (write(pipe_w, "c", 1) != 1)
		log_warn("watchdog"); /* it will clean up what is already clean: harmless */
	close(pipe_w);
	pipe_w = -1;
	if (watchdog_pidfd >= 0) {
		struct pollfd pfd = {.fd = watchdog_pidfd, .events = POLLIN};

		while (poll(&pfd, 1, DISARM_WAIT_MS) < 0 && errno == EINTR)
			;
		close(watchdog_pidfd);
		watchdog_pidfd = -1;
	}
}
