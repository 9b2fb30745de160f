/* Starting one launcher process: the fork, the child's setup (its cgroup, fds, identity) and
 * exec of bwrap or the launcher, and the bounded wait for its hello. */
#include "launch_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "fdres.h"
#include "identity.h"
#include "msg.h"

/* Moves fd to a number above the ones we are about to fill. */
static int high(int fd)
{
	return fd < 0 ? -1 : fcntl(fd, F_DUPFD, 16);
}

/* In the child: join the launcher's cgroup, put the socket on fd 3 and the fds bwrap is told
 * about on 4, 5..., drop to the sandbox's identity, and exec bwrap (or the launcher itself). */
static void __attribute__((noreturn))
exec_launcher(const struct launch_spec *spec, int sock_fd, int err_fd)
{
	int cgfds[4], ncg = cgroup_join_fds(spec->cg, cgfds, 4);
	int hi_sock = high(sock_fd), hi_err = high(err_fd), hi_pass[5];
	int hi_ns = spec->netns >= 0 ? high(spec->netns) : -1;
	int null = open("/dev/null", O_RDWR);
	char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
	sigset_t none;
	int rc;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Out of the daemon's process group: Ctrl-C on the terminal of sbxfs -f (or a kill of
	 * its group) is the daemon's to handle, and must not kill the launcher under it. */
	setsid();
	for (int i = 0; i < ncg; i++)
		if (write(cgfds[i], "0", 1) < 0)
			dprintf(err_fd, "sbxfs: cannot join the sandbox cgroup: %s\n",
				strerror(errno));
	for (int i = 0; i < spec->npass; i++) {
		/* bwrap reads the seccomp program from the current offset: rewind it. */
		lseek(spec->pass_fds[i], 0, SEEK_SET);
		hi_pass[i] = high(spec->pass_fds[i]);
	}
	/* Nothing of the daemon's may reach the sandbox: not its stdin or stdout (a command
	 * could open them through /proc), not its environment. */
	if (hi_sock < 0 || hi_err < 0 || null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
	    dup2(hi_err, 2) < 0 || dup2(hi_sock, 3) < 0)
		_exit(127);
	for (int i = 0; i < spec->npass; i++)
		if (hi_pass[i] < 0 || dup2(hi_pass[i], 4 + i) < 0)
			_exit(127);
	/* Before the fds above it are closed, and while still root: entering a namespace
	 * needs CAP_SYS_ADMIN over it. */
	if (spec->netns >= 0 && (hi_ns < 0 || setns(hi_ns, CLONE_NEWNET) < 0)) {
		dprintf(2, "sbxfs: cannot join the sandbox's network namespace: %s\n",
			strerror(errno));
		_exit(126);
	}
	close_range(4 + (unsigned)spec->npass, ~0U, 0);
	if (spec->bwrap_argv && spec->child_setup && (rc = spec->child_setup()) < 0) {
		dprintf(2, "sbxfs: cannot make the sandbox's mounts: %s\n", strerror(-rc));
		_exit(126);
	}
	if (spec->id && identity_drop(spec->id) < 0) {
		dprintf(2, "sbxfs: cannot drop privileges: %s\n", strerror(errno));
		_exit(126);
	}
	if (spec->bwrap_argv) {
		execve(spec->bwrap_argv[0], spec->bwrap_argv, envp);
	} else {
		char *argv[] = {(char *)spec->launcher, NULL};

		execve(spec->launcher, argv, envp);
	}
	dprintf(2, "sbxfs: exec %s: %s\n", spec->bwrap_argv ? spec->bwrap_argv[0] : spec->launcher,
		strerror(errno));
	_exit(127);
}

int launch_exec_fork(const struct launch_spec *spec, int *sock, int *err_pipe, pid_t *launcher_pid)
{
	int sv[2], ep[2], rc;
	pid_t pid;

	if ((rc = fdres_socketpair(AF_UNIX, SOCK_STREAM, sv)) < 0)
		return rc;
	if ((rc = fdres_pipe(ep)) < 0) {
		close(sv[0]);
		close(sv[1]);
		return rc;
	}
	pid = fork();
	if (pid == 0)
		exec_launcher(spec, sv[1], ep[1]);
	close(sv[1]);
	close(ep[1]);
	if (pid < 0) {
		close(sv[0]);
		close(ep[0]);
		return -errno;
	}
	*sock = sv[0];
	*err_pipe = ep[0];
	*launcher_pid = pid;
	return 0;
}

int launch_exec_await_hello(int sock, int err_pipe, pid_t launcher_pid, char *err, size_t errlen)
{
	struct pollfd pfd = {.fd = sock, .events = POLLIN};
	char msg[4096];
	ssize_t n = 0;

	if (poll(&pfd, 1, 10000) > 0 && (pfd.revents & POLLIN))
		n = recv(sock, msg, MSG_HDR + 16, MSG_PEEK);
	if (n >= (ssize_t)MSG_HDR)
		return 0;
	n = read(err_pipe, msg, sizeof(msg) - 1);
	msg[n > 0 ? n : 0] = '\0';
	msg[strcspn(msg, "\n")] = '\0';
	snprintf(err, errlen, "the sandbox did not start: %s",
		 msg[0] ? msg : "no answer from the launcher");
	kill(launcher_pid, SIGKILL);
	waitpid(launcher_pid, NULL, 0);
	return -EIO;
}
