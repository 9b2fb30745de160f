/* The daemon's side of the launcher protocol: spawns sbxfs-launcher on a socketpair, queues
 * messages without ever blocking (a stopped launcher must not stall the daemon), routes STARTED
 * and EXITED to the owners of struct proc, reaps every child of the daemon (it is a child
 * subreaper), and restarts the launcher if it dies, failing the processes it had: at once after
 * a stable run, else with backoff (backoff.h), logging once per streak of failures. */
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backoff.h"
#include "cgroup.h"
#include "errlog.h"
#include "filter.h"
#include "fdres.h"
#include "identity.h"
#include "log.h"
#include "loop.h"
#include "msg.h"
#include "xmalloc.h"

struct outmsg {
	struct msgbuf buf;
	size_t off;
	int fds[MSG_MAXFDS];
	int nfds;
	uint64_t start_id, hold_id; /* what fails if the message cannot be sent */
	STAILQ_ENTRY(outmsg) link;
};

static struct launch_spec spec;
static pid_t launcher_pid;
static int err_pipe = -1; /* until the launcher is up; then errlog.c owns it */
static int sock = -1;
static struct loop_fd *sock_lf;
static struct msgbuf inbuf;
/* fds the launcher sent (a pty's master), oldest first, until their STARTED is handled */
static int fdq[8];
static size_t nfdq;
static struct backoff restarts;
static bool failed_start; /* the last launcher never said hello */
static struct loop_timer restart_timer;
static STAILQ_HEAD(, outmsg) outq = STAILQ_HEAD_INITIALIZER(outq);
static TAILQ_HEAD(, proc) procs = TAILQ_HEAD_INITIALIZER(procs);
static TAILQ_HEAD(, hold) holds = TAILQ_HEAD_INITIALIZER(holds);
static uint64_t next_id = 1;
/* START and HOLD messages the socket refused (ENOBUFS...): their owners learn it from a timer,
 * never inside the launch_start or launch_hold that queued them. */
static struct unsent {
	uint64_t start_id, hold_id;
	int err;
} *unsent;
static size_t nunsent;
static struct loop_timer unsent_timer;

static void outmsg_free(struct outmsg *om)
{
	for (int i = 0; i < om->nfds; i++)
		close(om->fds[i]);
	msgbuf_free(&om->buf);
	free(om);
}

static struct proc *proc_by_id(uint64_t id)
{
	struct proc *p;

	TAILQ_FOREACH(p, &procs, link)
		if (p->id == id)
			return p;
	return NULL;
}

static void proc_exited(struct proc *p, int status)
{
	TAILQ_REMOVE(&procs, p, link);
	p->id = 0;
	p->on_exit(p, status);
}

static void held(uint64_t id, int fdnum, pid_t pid)
{
	struct hold *h;

	TAILQ_FOREACH(h, &holds, link) {
		if (h->id == id) {
			TAILQ_REMOVE(&holds, h, link);
			h->on_held(h, fdnum, pid);
			return;
		}
	}
}

/* The seccomp filter protects the launcher and its stdin holder by their pids. */
static void hello(pid_t launcher, pid_t holder)
{
	static bool warned;

	if (restarts.streak > 1)
		log_warnx("the launcher is up again, after %u failed starts", restarts.streak - 1);
	backoff_up(&restarts);
	if (spec.bwrap_argv && !warned &&
	    (launcher != FILTER_LAUNCHER_PID || holder != FILTER_HOLDER_PID)) {
		log_warnx("the launcher runs as pid %d and its holder as %d, not %d and %d: "
			  "commands can signal them",
			  (int)launcher, (int)holder, FILTER_LAUNCHER_PID, FILTER_HOLDER_PID);
		warned = true;
	}
}

static void drop_fds(void)
{
	while (nfdq > 0)
		close(fdq[--nfdq]);
}

/* The oldest fd sent, the one this STARTED carried, goes to p if p waits for a pty and it is a
 * master: anything else (sandboxed code can write to this socket) is closed, and p then runs
 * without a terminal it can be reached through. */
static void take_pty(struct proc *p)
{
	int fd = nfdq ? fdq[0] : -1, ptn;

	if (nfdq)
		memmove(fdq, fdq + 1, --nfdq * sizeof(int));
	if (p && p->on_pty && fd >= 0 && ioctl(fd, TIOCGPTN, &ptn) == 0) {
		fcntl(fd, F_SETFL, O_NONBLOCK);
		p->on_pty(p, fd);
		return;
	}
	if (fd >= 0)
		close(fd);
	if (p && p->on_pty)
		log_warnx("the launcher sent no pty master for a terminal");
}

static void handle_msg(const char *buf, size_t len)
{
	struct proc *p;
	struct msg m;

	if (msg_decode(buf, len, &m) < 0) {
		log_warnx("malformed message from the launcher");
		return;
	}
	if (m.type == MSG_HELD) {
		held(m.id, m.a, m.b);
		msg_free(&m);
		return;
	}
	if (m.id == 0 && m.type == MSG_STARTED && !restarts.up)
		hello(m.a, m.b);
	p = m.id ? proc_by_id(m.id) : NULL; /* id 0: the launcher's hello */
	if (m.type == MSG_STARTED && m.b == MSG_FD_ATTACHED) {
		take_pty(p);
		m.b = 0;
	}
	if (p && m.type == MSG_STARTED) {
		p->pid = m.a;
		if (m.b) { /* fork failed: report it as an exec failure would be */
			p->start_err = m.b;
			proc_exited(p, 127 << 8);
		}
	} else if (p && m.type == MSG_EXITED) {
		proc_exited(p, m.a);
	}
	msg_free(&m);
}

/* A read of the socket that keeps the fds it brings (bounded: the rest are closed). */
static ssize_t recv_fds(char *buf, size_t len)
{
	char cbuf[CMSG_SPACE(sizeof(int) * MSG_MAXFDS)];
	struct iovec iov = {buf, len};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);

	if (n < 0)
		return n;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		int *fds = (int *)CMSG_DATA(c);
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < k; i++) {
			if (nfdq < sizeof(fdq) / sizeof(fdq[0]))
				fdq[nfdq++] = fds[i];
			else
				close(fds[i]);
		}
	}
	return n;
}

static void read_socket(void)
{
	for (;;) {
		ssize_t n, flen;
		size_t off = 0;

		if (inbuf.cap - inbuf.len < 65536) {
			inbuf.cap = inbuf.cap * 2 + 65536;
			inbuf.data = xrealloc(inbuf.data, inbuf.cap);
		}
		n = recv_fds(inbuf.data + inbuf.len, inbuf.cap - inbuf.len);
		if (n <= 0)
			return; /* EOF is seen as the launcher's SIGCHLD */
		inbuf.len += (size_t)n;
		while ((flen = msg_frame_len(inbuf.data + off, inbuf.len - off)) > 0) {
			handle_msg(inbuf.data + off, (size_t)flen);
			off += (size_t)flen;
		}
		if (flen < 0) {
			/* Sandboxed code can write to this socket too: a launcher that says
			 * nonsense is treated as dead, and replaced. */
			log_warnx("malformed frame from the launcher; restarting it");
			inbuf.len = 0;
			loop_mod_fd(sock_lf, 0);
			kill(launcher_pid, SIGKILL);
			return;
		}
		memmove(inbuf.data, inbuf.data + off, inbuf.len - off);
		inbuf.len -= off;
	}
}

static int send_one(struct outmsg *om)
{
	char cbuf[CMSG_SPACE(sizeof(int) * MSG_MAXFDS)];
	struct iovec iov = {om->buf.data + om->off, om->buf.len - om->off};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	if (om->off == 0 && om->nfds > 0) {
		struct cmsghdr *c;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)om->nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)om->nfds);
		memcpy(CMSG_DATA(c), om->fds, sizeof(int) * (size_t)om->nfds);
	}
	n = sendmsg(sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0)
		return -errno;
	om->off += (size_t)n;
	return 0;
}

static void fail_unsent(struct loop_timer *t)
{
	(void)t;
	for (size_t i = 0; i < nunsent; i++) {
		struct proc *p = unsent[i].start_id ? proc_by_id(unsent[i].start_id) : NULL;

		if (p) {
			p->start_err = unsent[i].err;
			proc_exited(p, 127 << 8);
		} else if (unsent[i].hold_id) {
			held(unsent[i].hold_id, -1, 0);
		}
	}
	nunsent = 0;
}

/* A START or HOLD that cannot be sent must not leave its owner waiting forever. */
static void lost(const struct outmsg *om, int err)
{
	if (!om->start_id && !om->hold_id)
		return;
	unsent = xrealloc(unsent, (nunsent + 1) * sizeof(*unsent));
	unsent[nunsent++] = (struct unsent){om->start_id, om->hold_id, err};
	unsent_timer.fn = fail_unsent;
	if (!unsent_timer.armed)
		loop_timer_arm(&unsent_timer, 0);
}

static void flush_out(void)
{
	struct outmsg *om;

	if (sock < 0)
		return; /* a restart is pending: sent once it is done */

	while ((om = STAILQ_FIRST(&outq))) {
		int rc = send_one(om);

		if (rc == -EAGAIN || rc == -EINTR)
			break;
		if (rc < 0 || om->off == om->buf.len) {
			if (rc < 0) {
				log_warnx("send to launcher: %s", strerror(-rc));
				/* Sent in part, the stream is broken: the launcher will be
				 * restarted, and that fails what it had. */
				if (om->off == 0)
					lost(om, -rc);
			}
			STAILQ_REMOVE_HEAD(&outq, link);
			outmsg_free(om);
		}
	}
	if (sock_lf)
		loop_mod_fd(sock_lf, EPOLLIN | (STAILQ_EMPTY(&outq) ? 0 : EPOLLOUT));
}

static int respawn(void);

static void queue_msg(struct outmsg *om)
{
	int rc;

	if (sock < 0 && !restart_timer.armed && (rc = respawn()) < 0) {
		lost(om, -rc);
		outmsg_free(om);
		return;
	}
	STAILQ_INSERT_TAIL(&outq, om, link);
	flush_out();
}

static void on_socket(struct loop_fd *lf, uint32_t events, void *arg)
{
	(void)lf;
	(void)arg;
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		read_socket();
	if (events & EPOLLOUT)
		flush_out();
}

/* In the child: join the launcher's cgroup, put the socket on fd 3 and the seccomp program on
 * fd 4, drop to the sandbox's identity, and exec bwrap (or the launcher itself). */
/* Moves fd to a number above the ones we are about to fill. */
static int high(int fd)
{
	return fd < 0 ? -1 : fcntl(fd, F_DUPFD, 16);
}

/* In the child: join the launcher's cgroup, put the socket on fd 3 and the fds bwrap is told
 * about on 4, 5..., drop to the sandbox's identity, and exec bwrap (or the launcher itself). */
static void __attribute__((noreturn)) exec_launcher(int sock_fd, int err_fd)
{
	int cgfds[4], ncg = cgroup_join_fds(spec.cg, cgfds, 4);
	int hi_sock = high(sock_fd), hi_err = high(err_fd), hi_pass[4];
	int null = open("/dev/null", O_RDWR);
	char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int i = 0; i < ncg; i++)
		if (write(cgfds[i], "0", 1) < 0)
			dprintf(err_fd, "sbxfs: cannot join the sandbox cgroup: %s\n",
				strerror(errno));
	for (int i = 0; i < spec.npass; i++) {
		/* bwrap reads the seccomp program from the current offset: rewind it. */
		lseek(spec.pass_fds[i], 0, SEEK_SET);
		hi_pass[i] = high(spec.pass_fds[i]);
	}
	/* Nothing of the daemon's may reach the sandbox: not its stdin or stdout (a command
	 * could open them through /proc), not its environment. */
	if (hi_sock < 0 || hi_err < 0 || null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
	    dup2(hi_err, 2) < 0 || dup2(hi_sock, 3) < 0)
		_exit(127);
	for (int i = 0; i < spec.npass; i++)
		if (hi_pass[i] < 0 || dup2(hi_pass[i], 4 + i) < 0)
			_exit(127);
	close_range(4 + (unsigned)spec.npass, ~0U, 0);
	if (spec.id && identity_drop(spec.id) < 0) {
		dprintf(2, "sbxfs: cannot drop privileges: %s\n", strerror(errno));
		_exit(126);
	}
	if (spec.bwrap_argv) {
		execve(spec.bwrap_argv[0], spec.bwrap_argv, envp);
	} else {
		char *argv[] = {(char *)spec.launcher, NULL};

		execve(spec.launcher, argv, envp);
	}
	dprintf(2, "sbxfs: exec %s: %s\n", spec.bwrap_argv ? spec.bwrap_argv[0] : spec.launcher,
		strerror(errno));
	_exit(127);
}

static int spawn_launcher(void)
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
		exec_launcher(sv[1], ep[1]);
	close(sv[1]);
	close(ep[1]);
	if (pid < 0) {
		close(sv[0]);
		close(ep[0]);
		return -errno;
	}
	sock = sv[0];
	fcntl(sock, F_SETFL, O_NONBLOCK);
	errlog_detach();
	err_pipe = ep[0];
	launcher_pid = pid;
	return 0;
}

/* Waits (bounded) for the launcher's hello, so a sandbox that cannot start fails the mount
 * with bwrap's own words. */
static int await_hello(char *err, size_t errlen)
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

static void watch_launcher(void)
{
	sock_lf = loop_add_fd(sock, EPOLLIN, on_socket, NULL);
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
	flush_out();
	return 0;
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
	struct proc *p;

	loop_del_fd(sock_lf);
	sock_lf = NULL;
	close(sock);
	sock = -1;
	inbuf.len = 0;
	drop_fds();
	while (!STAILQ_EMPTY(&outq)) {
		struct outmsg *om = STAILQ_FIRST(&outq);

		STAILQ_REMOVE_HEAD(&outq, link);
		outmsg_free(om);
	}
	/* What it started dies with it: with bwrap, its pid namespace goes; else we kill the
	 * sandbox's groups. Never by the pids it reported: sandboxed code can control the
	 * launcher (same user) and lie about them. */
	cgroup_kill_all();
	while ((p = TAILQ_FIRST(&procs)))
		proc_exited(p, SIGKILL);
	while (!TAILQ_EMPTY(&holds))
		held(TAILQ_FIRST(&holds)->id, -1, 0);
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
		if (pid == launcher_pid)
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
	if ((rc = await_hello(err, errlen)) < 0)
		return rc;
	backoff_started(&restarts, loop_now_ns());
	watch_launcher();
	return 0;
}

void launch_start(struct proc *p, const char *cwd, char *const argv[], char *const envp[],
		  int *fds, int nfds, int *cgfds, int ncg)
{
	struct outmsg *om = xcalloc(1, sizeof(*om));

	p->id = next_id++;
	p->pid = 0;
	p->start_err = 0;
	om->start_id = p->id;
	memcpy(om->fds, fds, sizeof(int) * (size_t)nfds);
	memcpy(om->fds + nfds, cgfds, sizeof(int) * (size_t)ncg);
	om->nfds = nfds + ncg;
	msg_start_encode(&om->buf, p->id, cwd, argv, envp, (uint32_t)nfds, (uint32_t)ncg);
	TAILQ_INSERT_TAIL(&procs, p, link);
	queue_msg(om);
}

void launch_start_pty(struct proc *p, const char *cwd, char *const argv[], char *const envp[],
		      int *cgfds, int ncg, unsigned rows, unsigned cols)
{
	struct outmsg *om = xcalloc(1, sizeof(*om));

	p->id = next_id++;
	p->pid = 0;
	p->start_err = 0;
	om->start_id = p->id;
	memcpy(om->fds, cgfds, sizeof(int) * (size_t)ncg);
	om->nfds = ncg;
	msg_start_pty_encode(&om->buf, p->id, cwd, argv, envp, (uint32_t)ncg, rows, cols);
	TAILQ_INSERT_TAIL(&procs, p, link);
	queue_msg(om);
}

void launch_hold(struct hold *h, int fd)
{
	struct outmsg *om = xcalloc(1, sizeof(*om));

	h->id = next_id++;
	om->hold_id = h->id;
	om->fds[0] = fd;
	om->nfds = 1;
	msg_int_encode(&om->buf, MSG_HOLD, h->id, 0, 0);
	TAILQ_INSERT_TAIL(&holds, h, link);
	queue_msg(om);
}

void launch_drop(struct hold *h)
{
	struct outmsg *om;
	struct hold *x;

	if (!h->id)
		return;
	TAILQ_FOREACH(x, &holds, link) {
		if (x == h) {
			TAILQ_REMOVE(&holds, h, link);
			break;
		}
	}
	om = xcalloc(1, sizeof(*om));
	msg_int_encode(&om->buf, MSG_DROP, h->id, 0, 0);
	queue_msg(om);
	h->id = 0;
}

void launch_signal(struct proc *p, int sig, bool group)
{
	struct outmsg *om;

	if (!p->id)
		return;
	om = xcalloc(1, sizeof(*om));
	msg_int_encode(&om->buf, MSG_SIGNAL, p->id, sig, group);
	queue_msg(om);
}

/* Its whole tree: its cgroup's processes, or without one its session (pgrp). A process the
 * launcher has not reported started may not be in its cgroup yet, so the launcher, which reads
 * this after the start, signals it too. */
void launch_signal_tree(struct proc *p, struct cgroup *cg, int sig)
{
	if (!cg || !p->pid)
		launch_signal(p, sig, true);
	if (cg)
		cgroup_signal(cg, 0, sig);
}

void launch_detach(struct proc *p)
{
	if (p->id)
		TAILQ_REMOVE(&procs, p, link);
	p->id = 0;
}

void launch_shutdown(void)
{
	struct timespec ts = {0, 10 * 1000 * 1000};
	int status;

	loop_timer_cancel(&restart_timer);
	if (sock < 0)
		return;
	shutdown(sock, SHUT_RDWR);
	for (int i = 0; i < 500; i++) {
		pid_t pid = waitpid(launcher_pid, &status, WNOHANG);

		if (pid == launcher_pid || (pid < 0 && errno == ECHILD))
			return;
		nanosleep(&ts, NULL);
	}
	log_warnx("the launcher did not exit; killing it");
	kill(launcher_pid, SIGKILL);
	waitpid(launcher_pid, &status, 0);
}
