/* The messages between the daemon and its launcher: queued without ever blocking (a stopped
 * launcher must not stall the daemon), the fds they carry, and the launcher's reports (STARTED,
 * EXITED, HELD) routed to the owners of struct proc and struct hold. */
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cgroup.h"
#include "handover.h"
#include "launch_priv.h"
#include "log.h"
#include "loop.h"
#include "msg.h"
#include "sysnotify.h"
#include "xmalloc.h"

struct outmsg {
	struct msgbuf buf;
	size_t off;
	int fds[MSG_MAXFDS];
	int nfds;
	uint64_t start_id, hold_id; /* what fails if the message cannot be sent */
	STAILQ_ENTRY(outmsg) link;
};

static struct loop_fd *sock_lf;
static struct msgbuf inbuf;
/* fds the launcher sent (a pty's master), oldest first, until their STARTED is handled */
static int fdq[8];
static size_t nfdq;
static STAILQ_HEAD(, outmsg) outq = STAILQ_HEAD_INITIALIZER(outq);
static TAILQ_HEAD(, proc) procs = TAILQ_HEAD_INITIALIZER(procs);
static TAILQ_HEAD(, hold) holds = TAILQ_HEAD_INITIALIZER(holds);
static uint64_t next_id = 1;
/* START and HOLD messages the socket refused (ENOBUFS...): their owners learn it from a timer,
 * never inside the launch_start or launch_hold that queued them. */
static struct unsent {
	uint64_t start_id, hold_id;
	int err;
} * unsent;
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

	TAILQ_FOREACH(h, &holds, link)
	{
		if (h->id == id) {
			TAILQ_REMOVE(&holds, h, link);
			h->on_held(h, fdnum, pid);
			return;
		}
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

/* STARTED: the launcher's hello (id 0), or a process's start or failed fork. */
static void started(struct msg *m)
{
	struct proc *p = m->id ? proc_by_id(m->id) : NULL;

	if (m->id == 0)
		launch_hello(m->a, m->b);
	if (m->b == MSG_FD_ATTACHED) {
		take_pty(p);
		m->b = 0;
	}
	if (!p)
		return;
	p->pid = m->a;
	if (m->b) { /* fork failed: report it as an exec failure would be */
		p->start_err = m->b;
		proc_exited(p, 127 << 8);
	} else if (p->on_started) {
		p->on_started(p);
	}
}

/* NOTIFY: the new launcher's listener (sysnotify.h), only before its hello, when nothing of
 * the sandbox runs yet that could have sent one of its own. */
static void notify_listener(void)
{
	int fd = nfdq ? fdq[0] : -1;
	uint64_t none = 0;

	if (nfdq)
		memmove(fdq, fdq + 1, --nfdq * sizeof(int));
	if (fd >= 0 && !launch_up() && ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &none) < 0 &&
	    errno == ENOENT) {
		sysnotify_take(fd);
		return;
	}
	log_warnx("a listener from the launcher that is none, or after its hello: ignored");
	if (fd >= 0)
		close(fd);
}

static void exited(struct msg *m)
{
	struct proc *p = m->id ? proc_by_id(m->id) : NULL;

	if (p)
		proc_exited(p, m->a);
}

static void handle_msg(const char *buf, size_t len)
{
	struct msg m;

	if (msg_decode(buf, len, &m) < 0) {
		log_warnx("malformed message from the launcher");
		return;
	}
	switch (m.type) {
	case MSG_HELD:
		held(m.id, m.a, m.b);
		break;
	case MSG_STARTED:
		started(&m);
		break;
	case MSG_EXITED:
		exited(&m);
		break;
	case MSG_NOTIFY:
		notify_listener();
		break;
	default:
		log_warnx("unexpected message type %u from the launcher", m.type);
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
	ssize_t n = recvmsg(launch_sock, &mh, MSG_CMSG_CLOEXEC);

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

static void unwatch(void)
{
	if (sock_lf)
		loop_del_fd(sock_lf);
	sock_lf = NULL;
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
		if (n == 0) {
			/* The rest is the launcher's SIGCHLD's to handle, which may come a while
			 * later (its bwrap ends after it): till then a socket at its end would
			 * wake the loop without pause (epoll says EPOLLHUP whatever it is asked). */
			unwatch();
			return;
		}
		if (n < 0)
			return;
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
			unwatch();
			kill(launch_pid, SIGKILL);
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
	n = sendmsg(launch_sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
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

	if (launch_sock < 0)
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

static void queue_msg(struct outmsg *om)
{
	int rc;

	if (launch_sock < 0 && (rc = launch_revive()) < 0) {
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

void launch_msg_watch(void)
{
	sock_lf = loop_add_fd(launch_sock, EPOLLIN, on_socket, NULL);
}

void launch_msg_flush(void)
{
	flush_out();
}

void launch_msg_disconnect(void)
{
	unwatch();
	close(launch_sock);
	launch_sock = -1;
	inbuf.len = 0;
	drop_fds();
	while (!STAILQ_EMPTY(&outq)) {
		struct outmsg *om = STAILQ_FIRST(&outq);

		STAILQ_REMOVE_HEAD(&outq, link);
		outmsg_free(om);
	}
}

void launch_msg_fail_all(void)
{
	struct proc *p;

	while ((p = TAILQ_FIRST(&procs)))
		proc_exited(p, SIGKILL);
	while (!TAILQ_EMPTY(&holds))
		held(TAILQ_FIRST(&holds)->id, -1, 0);
}

/* The message that starts p, which waits for its reports from then on, under a new id. */
static struct outmsg *start_msg(struct proc *p)
{
	struct outmsg *om = xcalloc(1, sizeof(*om));

	/* What the host wrote before this start is the sandbox's when it runs. */
	handover_run();

	p->id = next_id++;
	p->pid = 0;
	p->start_err = 0;
	om->start_id = p->id;
	TAILQ_INSERT_TAIL(&procs, p, link);
	return om;
}

void launch_start(struct proc *p, const char *cwd, char *const argv[], char *const envp[], int *fds,
		  int nfds, int *cgfds, int ncg)
{
	struct outmsg *om = start_msg(p);

	memcpy(om->fds, fds, sizeof(int) * (size_t)nfds);
	memcpy(om->fds + nfds, cgfds, sizeof(int) * (size_t)ncg);
	om->nfds = nfds + ncg;
	msg_start_encode(&om->buf, p->id, cwd, argv, envp, (uint32_t)nfds, (uint32_t)ncg);
	queue_msg(om);
}

void launch_start_pty(struct proc *p, const char *cwd, char *const argv[], char *const envp[],
		      int *cgfds, int ncg, unsigned rows, unsigned cols)
{
	struct outmsg *om = start_msg(p);

	memcpy(om->fds, cgfds, sizeof(int) * (size_t)ncg);
	om->nfds = ncg;
	msg_start_pty_encode(&om->buf, p->id, cwd, argv, envp, (uint32_t)ncg, rows, cols);
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
	TAILQ_FOREACH(x, &holds, link)
	{
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
