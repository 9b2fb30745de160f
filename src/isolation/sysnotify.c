/* Refused system calls, noted (sysnotify.h). A notification is answered at once, after the
 * caller's /proc entries are read: the caller waits in the kernel meanwhile, so they are its
 * own (SECCOMP_IOCTL_NOTIF_ID_VALID says it did not die and leave its pid to another). What a
 * process names itself (comm) is its own text; the report's reader escapes it. */
#include "sysnotify.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cgroup.h"
#include "cgroup_priv.h"
#include "log.h"
#include "loop.h"

static int listener = -1;
static struct loop_fd *listener_lf;
static void (*report)(const struct sys_refusal *r);

void sysnotify_set_report(void (*fn)(const struct sys_refusal *r))
{
	report = fn;
}

/* Up to len - 1 bytes of /proc/PID/name, its last newline cut. */
static void proc_text(pid_t pid, const char *name, char *buf, size_t len)
{
	char path[64];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, len - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
}

/* Its pid in the innermost namespace: the last field of NSpid in /proc/PID/status. */
static pid_t inner_pid(pid_t pid)
{
	char buf[4096], *p, *end;
	pid_t last = 0;

	proc_text(pid, "status", buf, sizeof(buf));
	if (!(p = strstr(buf, "\nNSpid:")))
		return 0;
	for (p += 7; *p && *p != '\n'; p = end) {
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		last = (pid_t)v;
	}
	return last;
}

/* The name of its group right below the sandbox's, from /proc/PID/cgroup. */
static void group_below_sandbox(pid_t pid, char *out, size_t len)
{
	struct cgroup *root = cgroup_sandbox();
	const char *dir = root ? root->dir[cg_is_v1() ? V1_PIDS : 0] : NULL;
	const char *base = dir ? strrchr(dir, '/') : NULL;
	char buf[4096], needle[128], *p;

	out[0] = '\0';
	if (!base)
		return;
	proc_text(pid, "cgroup", buf, sizeof(buf));
	snprintf(needle, sizeof(needle), "%s/", base);
	if ((p = strstr(buf, needle))) {
		p += strlen(needle);
		snprintf(out, len, "%.*s", (int)strcspn(p, "/\n"), p);
	}
}

static void on_notify(struct loop_fd *lf, uint32_t events, void *arg)
{
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	char comm[32], group[64], num[16], *name;
	struct sys_refusal r;

	(void)arg;
	if (events & (EPOLLHUP | EPOLLERR)) { /* its launcher and every process of it are gone */
		if (lf == listener_lf)
			sysnotify_stop();
		return;
	}
	memset(&req, 0, sizeof(req));
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
		return; /* ENOENT: the caller was killed meanwhile */
	proc_text(req.pid, "comm", comm, sizeof(comm));
	group_below_sandbox(req.pid, group, sizeof(group));
	r = (struct sys_refusal){
	    .pid = inner_pid(req.pid), .host_pid = req.pid, .comm = comm, .group = group};
	name = seccomp_syscall_resolve_num_arch(req.data.arch, req.data.nr);
	snprintf(num, sizeof(num), "%d", req.data.nr);
	r.call = name ? name : num;
	resp = (struct seccomp_notif_resp){.id = req.id, .error = -EPERM};
	/* still the same caller: what was read is its own */
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) == 0 &&
	    ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) == 0 && report)
		report(&r);
	free(name);
}

void sysnotify_take(int fd)
{
	sysnotify_stop();
	listener = fd;
	listener_lf = loop_add_fd(fd, EPOLLIN, on_notify, NULL);
}

void sysnotify_stop(void)
{
	if (listener_lf)
		loop_del_fd(listener_lf);
	if (listener >= 0)
		close(listener);
	listener_lf = NULL;
	listener = -1;
}
