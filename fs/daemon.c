/* Becoming a daemon the way mount(8) and service managers expect: the starting process stays
 * until the mount answers and exits 0, or prints why it failed and exits 1; the daemon leaves
 * the terminal's session and holds no directory or terminal open. */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "xmalloc.h"

/* The thread that attaches the workspace says the daemon is ready, and may do so while the main
 * thread ends: the two are serialized. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int report_fd = -1; /* the child's end of the pipe to the parent; -1: foreground */
static char *pid_path;	   /* written once ready, removed at the end; NULL: foreground */

/* The child's word: a newline once it serves, else why it failed, or nothing if it died. */
static void __attribute__((noreturn)) parent_wait(int fd, pid_t child, const char *mountpoint)
{
	char msg[1024];
	size_t len = 0;
	ssize_t n;
	struct stat st;
	int status;

	/* Up to the ready byte, or the whole message: not to EOF, which a child the daemon forked
	 * and did not exec could hold off. */
	while (len < sizeof(msg) - 1 && !(len && msg[0] == '\n') &&
	       ((n = read(fd, msg + len, sizeof(msg) - 1 - len)) > 0 || (n < 0 && errno == EINTR)))
		len += n > 0 ? (size_t)n : 0;
	msg[len] = '\0';
	if (len == 1 && msg[0] == '\n') {
		/* The mount's root answered: a request the daemon serves. */
		if (stat(mountpoint, &st) == 0)
			exit(0);
		fatal("the daemon started but %s does not answer", mountpoint);
	}
	if (len)
		fatalx("%s", msg);
	if (waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status))
		exit(WEXITSTATUS(status));
	fatalx("the daemon ended while starting (see its log)");
}

void daemon_start(const char *mountpoint, const char *pidfile)
{
	int fds[2], null;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		fatal("pipe");
	if ((pid = fork()) < 0)
		fatal("fork");
	if (pid > 0) {
		close(fds[1]);
		parent_wait(fds[0], pid, mountpoint);
	}
	close(fds[0]);
	report_fd = fds[1];
	pid_path = xstrdup(pidfile);
	if (setsid() < 0)
		fatal("setsid");
	if (chdir("/") < 0)
		fatal("chdir /");
	if ((null = open("/dev/null", O_RDWR)) < 0)
		fatal("/dev/null");
	dup2(null, STDIN_FILENO);
	dup2(null, STDOUT_FILENO);
	dup2(null, STDERR_FILENO);
	if (null > STDERR_FILENO)
		close(null);
}

static void report(const char *msg)
{
	size_t len = strlen(msg);

	if (report_fd < 0)
		return;
	if (write(report_fd, msg, len) != (ssize_t)len)
		log_warn("cannot tell the starting process");
	close(report_fd);
	report_fd = -1;
}

/* Before the parent exits: systemd reads it then. */
static void write_pid_file(void)
{
	FILE *f;
	bool ok;

	if (!pid_path)
		return;
	if (!(f = fopen(pid_path, "we"))) {
		log_warn("pid file %s", pid_path);
		return;
	}
	ok = fprintf(f, "%d\n", (int)getpid()) > 0;
	if (fclose(f) != 0 || !ok)
		log_warn("pid file %s", pid_path);
}

void daemon_ready(void)
{
	pthread_mutex_lock(&lock);
	write_pid_file();
	report("\n");
	pthread_mutex_unlock(&lock);
}

void daemon_end(void)
{
	pthread_mutex_lock(&lock);
	if (pid_path && unlink(pid_path) < 0 && errno != ENOENT)
		log_warn("pid file %s", pid_path);
	free(pid_path);
	pid_path = NULL;
	pthread_mutex_unlock(&lock);
}

void daemon_failed(const char *why)
{
	pthread_mutex_lock(&lock);
	report(why[0] ? why : "failed");
	pthread_mutex_unlock(&lock);
}
