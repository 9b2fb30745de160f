/* sbxfs-launcher: the one process that starts every process of the sandbox. The daemon talks to
 * it over the socket on fd 3 (msg.h): START forks, joins the given cgroups and execs with the fds
 * it was sent, SIGNAL signals, HOLD has the stdin holder (holder.h) keep an fd open so a shell
 * can open /proc/HOLDER/fd/N (how a command gets a fresh stdin pipe), and it reports STARTED,
 * EXITED and HELD. It is not dumpable, so commands (same user) can neither ptrace it nor take
 * its fds; the seccomp filter refuses them its signals. It is a child subreaper; when the daemon
 * goes away it kills everything it started, orphans included. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "holder.h"
#include "notifyfilter.h"
#include "log.h"
#include "msg.h"
#include "xmalloc.h"

#define SOCK_FD 3
/* Held fds get numbers from here up in the holder, clear of anything it has of its own. */
#define HELD_FD_BASE 16

struct child {
	uint64_t id;
	pid_t pid;
};

struct held {
	uint64_t id;
	int fdnum; /* in the holder */
};

static struct child *children;
static size_t nchildren;
static struct held *helds;
static size_t nhelds;
/* Holds sent to the holder and not acked yet, oldest first. */
static struct held *pending;
static size_t npending;
static int holder_sock = -1;
static pid_t holder_pid;
static struct msgbuf inbuf;
static int fdq[64];
static size_t nfdq;

static void send_msg(uint32_t type, uint64_t id, int32_t a, int32_t b)
{
	struct msgbuf out = {0};
	size_t off = 0;

	msg_int_encode(&out, type, id, a, b);
	while (off < out.len) {
		ssize_t n = write(SOCK_FD, out.data + off, out.len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	msgbuf_free(&out);
}

static void child_setup_fds(const int *fds, uint32_t nfds)
{
	int high[MSG_MAXFDS];

	/* Move every fd above the targets first so no dup2 clobbers a source. */
	for (uint32_t i = 0; i < nfds; i++)
		high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 64);
	for (uint32_t i = 0; i < nfds; i++)
		if (high[i] < 0 || dup2(high[i], (int)i) < 0)
			_exit(127);
	close_range(nfds, ~0U, 0);
}

static void child_reset_signals(void)
{
	sigset_t none;

	sigemptyset(&none);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* The daemon raises its own fd limit (one fd per workspace inode); commands get the usual
 * soft limit back, as some tools loop over every possible fd. */
static void child_reset_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > 1024) {
		rl.rlim_cur = 1024;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Joining before exec means nothing the program forks can start outside its group. The
 * parent moves it there too before it reports the start (see parent_join_cgroups). */
static void child_join_cgroups(const int *cgfds, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (write(cgfds[i], "0", 1) < 0)
			dprintf(2, "sbxfs-launcher: cannot join cgroup: %s\n", strerror(errno));
}

/* The child is in its groups when its STARTED goes out, so a signal to a group that follows the
 * report reaches it, whichever of the two runs first. */
static void parent_join_cgroups(pid_t pid, const int *cgfds, uint32_t n)
{
	char num[16];
	int len = snprintf(num, sizeof(num), "%d", (int)pid);

	for (uint32_t i = 0; i < n; i++)
		if (write(cgfds[i], num, (size_t)len) < 0)
			dprintf(2, "sbxfs-launcher: cannot move %d to its cgroup: %s\n", (int)pid,
				strerror(errno));
}

static void __attribute__((noreturn)) child_exec(struct msg *m, const int *fds)
{
	child_reset_signals();
	child_reset_nofile();
	setsid();
	child_join_cgroups(fds + m->nfds, m->ncg);
	child_setup_fds(fds, m->nfds);
	/* A terminal's program leads the session its slave controls (setsid above). */
	if (m->type == MSG_START_PTY && ioctl(0, TIOCSCTTY, 0) < 0)
		dprintf(2, "sbxfs-launcher: cannot take the terminal: %s\n", strerror(errno));
	if (chdir(m->cwd) < 0) {
		dprintf(2, "sbxfs-launcher: cannot enter %s: %s; starting in /\n", m->cwd,
			strerror(errno));
		if (chdir("/") < 0)
			_exit(126);
	}
	execve(m->argv[0], m->argv, m->envp);
	dprintf(2, "sbxfs-launcher: exec %s: %s\n", m->argv[0], strerror(errno));
	_exit(127);
}

/* A message with fd on its first byte. */
static void send_with_fd(uint32_t type, uint64_t id, int32_t a, int32_t b, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct msgbuf out = {0};
	struct iovec iov;
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *c;
	size_t off = 0;

	memset(cbuf, 0, sizeof(cbuf));
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	msg_int_encode(&out, type, id, a, b);
	while (off < out.len) {
		ssize_t n;

		iov = (struct iovec){out.data + off, out.len - off};
		n = sendmsg(SOCK_FD, &mh, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
		mh.msg_control = NULL; /* the fd went with the first byte */
		mh.msg_controllen = 0;
	}
	msgbuf_free(&out);
}

/* The STARTED of a START_PTY carries the master on its first byte. */
static void send_started_fd(uint64_t id, pid_t pid, int fd)
{
	send_with_fd(MSG_STARTED, id, (int32_t)pid, MSG_FD_ATTACHED, fd);
}

/* --filter-fd=N: the filter goes on before anything starts, and its listener to the daemon
 * before the hello; a launcher that cannot has the sandbox refuse nothing it should report,
 * so it does not run. */
static void install_filter(int argc, char **argv)
{
	int fd, listener;

	if (argc < 2 || strncmp(argv[1], "--filter-fd=", 12))
		return;
	fd = atoi(argv[1] + 12);
	listener = notify_filter_install(fd);
	if (listener < 0) {
		errno = -listener;
		fatal("cannot install the seccomp filter whose refusals the daemon notes");
	}
	send_with_fd(MSG_NOTIFY, 0, 0, 0, listener);
	close(listener);
}

/* A pty of the sandbox's own devpts: master to *master, slave (no ctty yet) to *slave. */
static int open_pty(const struct msg *m, int *master, int *slave)
{
	struct winsize ws = {.ws_row = (unsigned short)m->rows, .ws_col = (unsigned short)m->cols};
	int unlock = 0;

	*master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*master < 0)
		return -errno;
	if (ioctl(*master, TIOCSPTLCK, &unlock) < 0 || ioctl(*master, TIOCSWINSZ, &ws) < 0 ||
	    (*slave = ioctl(*master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
		int err = errno;

		close(*master);
		return -err;
	}
	return 0;
}

static int take_queued_fds(int *fds, uint32_t n)
{
	if (n > nfdq) {
		log_warnx("%u fds announced, %zu received", n, nfdq);
		return -EBADMSG;
	}
	memcpy(fds, fdq, n * sizeof(int));
	nfdq -= n;
	memmove(fdq, fdq + n, nfdq * sizeof(int));
	return 0;
}

static int free_fdnum(void)
{
	for (int fdnum = HELD_FD_BASE;; fdnum++) {
		size_t i = 0;

		while (i < nhelds && helds[i].fdnum != fdnum)
			i++;
		if (i == nhelds)
			return fdnum;
	}
}

static void do_hold(struct msg *m)
{
	int fd, fdnum = free_fdnum();

	if (take_queued_fds(&fd, 1) < 0) {
		send_msg(MSG_HELD, m->id, -1, (int32_t)holder_pid);
		return;
	}
	if (holder_hold(holder_sock, fd, fdnum) < 0) {
		close(fd);
		send_msg(MSG_HELD, m->id, -1, (int32_t)holder_pid);
		return;
	}
	close(fd);
	helds = xrealloc(helds, (nhelds + 1) * sizeof(*helds));
	helds[nhelds++] = (struct held){m->id, fdnum};
	pending = xrealloc(pending, (npending + 1) * sizeof(*pending));
	pending[npending++] = (struct held){m->id, fdnum};
}

/* By id: a hold dropped before its ack may have given its number to a newer one. */
static void forget_held(uint64_t id)
{
	for (size_t i = 0; i < nhelds; i++) {
		if (helds[i].id == id) {
			helds[i] = helds[--nhelds];
			return;
		}
	}
}

/* The holder's acks, one byte per hold in order: the path can be opened from now on. */
static void read_acks(void)
{
	char acks[256];
	ssize_t n = read(holder_sock, acks, sizeof(acks));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0)
		fatalx("the stdin holder is gone");
	for (ssize_t i = 0; i < n && npending > 0; i++) {
		struct held h = pending[0];

		memmove(pending, pending + 1, --npending * sizeof(*pending));
		if (!acks[i])
			forget_held(h.id);
		send_msg(MSG_HELD, h.id, acks[i] ? h.fdnum : -1, (int32_t)holder_pid);
	}
}

/* Holds are dropped in the order they were sent, so the holder always closes the right fd. */
static void do_drop(struct msg *m)
{
	for (size_t i = 0; i < nhelds; i++) {
		if (helds[i].id == m->id) {
			holder_drop(holder_sock, helds[i].fdnum);
			helds[i] = helds[--nhelds];
			return;
		}
	}
}

/* fds: what the message brought (the cgroup files for a START_PTY); for a pty the child's
 * stdio is its slave three times, before them. */
static void do_start(struct msg *m)
{
	uint32_t got = m->nfds + m->ncg, ncg = m->ncg;
	int fds[MSG_MAXFDS + 3], master = -1, slave = -1, rc;
	pid_t pid;

	if (take_queued_fds(fds + 3, got) < 0) {
		send_msg(MSG_STARTED, m->id, 0, EBADMSG);
		return;
	}
	if (m->type == MSG_START_PTY && (rc = open_pty(m, &master, &slave)) < 0) {
		for (uint32_t i = 0; i < got; i++)
			close(fds[3 + i]);
		send_msg(MSG_STARTED, m->id, 0, -rc);
		return;
	}
	fds[0] = fds[1] = fds[2] = slave;
	if (master >= 0)
		m->nfds = 3;
	pid = fork();
	if (pid == 0)
		child_exec(m, master >= 0 ? fds : fds + 3);
	if (pid > 0)
		parent_join_cgroups(pid, fds + 3 + got - ncg, ncg);
	for (uint32_t i = 0; i < got; i++)
		close(fds[3 + i]);
	if (slave >= 0)
		close(slave);
	if (pid < 0) {
		send_msg(MSG_STARTED, m->id, 0, errno);
		if (master >= 0)
			close(master);
		return;
	}
	children = xrealloc(children, (nchildren + 1) * sizeof(*children));
	children[nchildren++] = (struct child){m->id, pid};
	if (master >= 0) {
		send_started_fd(m->id, pid, master);
		close(master);
	} else {
		send_msg(MSG_STARTED, m->id, pid, 0);
	}
}

static struct child *child_by_id(uint64_t id)
{
	for (size_t i = 0; i < nchildren; i++)
		if (children[i].id == id)
			return &children[i];
	return NULL;
}

static void do_signal(struct msg *m)
{
	struct child *c = child_by_id(m->id);

	if (!c)
		return;
	if (m->b)
		kill(-c->pid, m->a);
	kill(c->pid, m->a);
}

static void handle_msg(const char *buf, size_t len)
{
	struct msg m;

	if (msg_decode(buf, len, &m) < 0)
		fatalx("malformed message from the daemon");
	switch (m.type) {
	case MSG_START:
	case MSG_START_PTY:
		do_start(&m);
		break;
	case MSG_SIGNAL:
		do_signal(&m);
		break;
	case MSG_HOLD:
		do_hold(&m);
		break;
	case MSG_DROP:
		do_drop(&m);
		break;
	default:
		fatalx("unexpected message type %u", m.type);
	}
	msg_free(&m);
}

static void take_fds(struct msghdr *mh)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t n;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		if (nfdq + n > sizeof(fdq) / sizeof(fdq[0]))
			fatalx("too many fds in flight");
		memcpy(fdq + nfdq, CMSG_DATA(c), n * sizeof(int));
		nfdq += n;
	}
}

/* Returns false when the daemon has gone away. */
static bool read_socket(void)
{
	char data[65536];
	char cbuf[CMSG_SPACE(sizeof(int) * MSG_MAXFDS)];
	struct iovec iov = {data, sizeof(data)};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	ssize_t n = recvmsg(SOCK_FD, &mh, MSG_CMSG_CLOEXEC);
	ssize_t flen;
	size_t off = 0;

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return false;
	take_fds(&mh);
	if (inbuf.len + (size_t)n > inbuf.cap) {
		inbuf.cap = inbuf.len + (size_t)n + 65536;
		inbuf.data = xrealloc(inbuf.data, inbuf.cap);
	}
	memcpy(inbuf.data + inbuf.len, data, (size_t)n);
	inbuf.len += (size_t)n;
	while ((flen = msg_frame_len(inbuf.data + off, inbuf.len - off)) > 0) {
		handle_msg(inbuf.data + off, (size_t)flen);
		off += (size_t)flen;
	}
	if (flen < 0)
		fatalx("malformed frame from the daemon");
	memmove(inbuf.data, inbuf.data + off, inbuf.len - off);
	inbuf.len -= off;
	return true;
}

static void reap(void)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid == holder_pid)
			fatalx("the stdin holder died (wait status %d)", status);
		for (size_t i = 0; i < nchildren; i++) {
			if (children[i].pid != pid)
				continue;
			send_msg(MSG_EXITED, children[i].id, status, 0);
			children[i] = children[--nchildren];
			break;
		}
	}
}

/* Kills our children, including orphans reparented to us, until none is left. */
static size_t kill_children_once(void)
{
	char path[64], buf[4096];
	size_t killed = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", getpid());
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fscanf(f, "%4095s", buf) == 1) {
		pid_t pid = (pid_t)atoi(buf);

		if (pid > 0 && pid != holder_pid) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			killed++;
		}
	}
	fclose(f);
	return killed;
}

static void shutdown_all(void)
{
	close(holder_sock); /* the holder exits at EOF: the filter forbids signalling it */
	for (size_t i = 0; i < nchildren; i++)
		kill(-children[i].pid, SIGKILL);
	while (kill_children_once() > 0)
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	while (waitpid(-1, NULL, 0) > 0)
		;
}

/* The holder is forked before anything else, so it is pid 3 of the sandbox (bwrap's init is 1,
 * the launcher 2): the pids the seccomp filter protects. */
static void start_holder(void)
{
	holder_sock = holder_start(&holder_pid);
	if (holder_sock < 0) {
		errno = -holder_sock;
		fatal("cannot start the stdin holder");
	}
	prctl(PR_SET_DUMPABLE, 0);
}

int main(int argc, char **argv)
{
	struct pollfd pfd[3];
	sigset_t mask;

	log_init("sbxfs-launcher", LOG_LVL_INFO, NULL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	install_filter(argc, argv);
	start_holder();
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* hello: the sandbox is up */
	send_msg(MSG_STARTED, 0, (int32_t)getpid(), (int32_t)holder_pid);
	pfd[0] = (struct pollfd){.fd = SOCK_FD, .events = POLLIN};
	pfd[1] = (struct pollfd){.fd = signalfd(-1, &mask, SFD_CLOEXEC), .events = POLLIN};
	pfd[2] = (struct pollfd){.fd = holder_sock, .events = POLLIN};
	if (pfd[1].fd < 0)
		fatal("signalfd");
	for (;;) {
		if (poll(pfd, 3, -1) < 0 && errno != EINTR)
			fatal("poll");
		if (pfd[1].revents) {
			struct signalfd_siginfo si;

			while (read(pfd[1].fd, &si, sizeof(si)) < 0 && errno == EINTR)
				;
			reap();
		}
		if (pfd[2].revents)
			read_acks();
		if (pfd[0].revents && !read_socket())
			break;
	}
	shutdown_all();
	return 0;
}
