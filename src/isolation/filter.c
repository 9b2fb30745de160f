/* The sandbox's seccomp filter (see filter.h). Everything is allowed but what lets a process
 * leave or widen the sandbox: new namespaces, mounts, kernel keyrings, bpf, io_uring,
 * userfaultfd, perf events, module and kexec loading, faking terminal input, and sockets of any
 * family but local, IP and netlink (vsock, for one, ignores network namespaces). Refusals are
 * EPERM, as an unprivileged process would get, and EAFNOSUPPORT for a socket family, as a kernel
 * without it answers; clone3 gets ENOSYS so libc falls back to clone, whose flags a filter can
 * see. */
#include "filter.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/ioprio.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

static const unsigned long ns_flags[] = {CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS,
					 CLONE_NEWIPC, CLONE_NEWUSER,	CLONE_NEWPID,
					 CLONE_NEWNET, CLONE_NEWTIME};

static const int denied[] = {
    SCMP_SYS(unshare),
    SCMP_SYS(setns),
    SCMP_SYS(mount),
    SCMP_SYS(umount2),
    SCMP_SYS(pivot_root),
    SCMP_SYS(chroot),
    SCMP_SYS(bpf),
    SCMP_SYS(keyctl),
    SCMP_SYS(add_key),
    SCMP_SYS(request_key),
    SCMP_SYS(io_uring_setup),
    SCMP_SYS(io_uring_enter),
    SCMP_SYS(io_uring_register),
    SCMP_SYS(userfaultfd),
    SCMP_SYS(perf_event_open),
    SCMP_SYS(kexec_load),
    SCMP_SYS(kexec_file_load),
    SCMP_SYS(init_module),
    SCMP_SYS(finit_module),
    SCMP_SYS(delete_module),
    SCMP_SYS(open_by_handle_at),
    SCMP_SYS(fsopen),
    SCMP_SYS(fsmount),
    SCMP_SYS(fspick),
    SCMP_SYS(move_mount),
    SCMP_SYS(open_tree),
    SCMP_SYS(mount_setattr),
    SCMP_SYS(swapon),
    SCMP_SYS(swapoff),
    SCMP_SYS(acct),
};

/* The refusals that are reported (filter_notify_bpf_fd): act is the notification, or, for a
 * sandbox without the launcher's filter, the plain EPERM. */
static int add_reported_rules(scmp_filter_ctx ctx, uint32_t act)
{
	int rc = 0;

	for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]) && rc == 0; i++)
		rc = seccomp_rule_add(ctx, act, denied[i], 0);
	/* One rule per flag: a masked compare can only ask for all of its bits. */
	for (size_t i = 0; i < sizeof(ns_flags) / sizeof(ns_flags[0]) && rc == 0; i++)
		rc = seccomp_rule_add(ctx, act, SCMP_SYS(clone), 1,
				      SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
	return rc;
}

static int add_rules(scmp_filter_ctx ctx)
{
	int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);

	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				      SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI));
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				      SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX));
	return rc;
}

/* A rule refusing syscall sc when its argument arg (an int: the upper half is ignored) is v. */
static int refuse_if_arg(scmp_filter_ctx ctx, int err, int sc, unsigned arg, int v)
{
	struct scmp_arg_cmp cmp = {arg, SCMP_CMP_MASKED_EQ, 0xffffffffu, (uint32_t)v};

	return seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(err), sc, 1, &cmp);
}

/* socket() and socketpair() of any family below AF_MAX but these get EAFNOSUPPORT (the kernel
 * refuses larger ones itself). One rule per refused family: a filter cannot ask "none of". */
static const int socket_families[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};

static bool family_allowed(int family)
{
	for (size_t i = 0; i < sizeof(socket_families) / sizeof(socket_families[0]); i++)
		if (socket_families[i] == family)
			return true;
	return false;
}

static int add_socket_rules(scmp_filter_ctx ctx)
{
	int rc = 0;

	for (int family = 0; family < AF_MAX && rc == 0; family++) {
		if (family_allowed(family))
			continue;
		rc = refuse_if_arg(ctx, EAFNOSUPPORT, SCMP_SYS(socket), 0, family);
		if (rc == 0)
			rc = refuse_if_arg(ctx, EAFNOSUPPORT, SCMP_SYS(socketpair), 0, family);
	}
	return rc;
}

/* The launcher, its stdin holder and bwrap's init are out of reach of commands (same user):
 * no signal to their pids or groups, nor to everyone (kill -1 would reach the launcher); no
 * pidfd, ptrace or memory access; no SIGIO aimed at them; no limits (RLIMIT_CPU kills) nor
 * scheduling or I/O priority set for them, by pid or for the whole user (PRIO_USER and
 * IOPRIO_WHO_USER reach every process of the uid). The group forms need no rule of their own:
 * the three are in init's group, whose id is init's pid, refused above, and a command cannot
 * join it from its own session.
 * pidfd_send_signal gets ENOSYS, as it also takes a /proc/PID directory fd: callers fall back
 * to kill. The launcher is also not dumpable, which covers /proc/PID/mem and /proc/PID/fd. */
static int add_launcher_rules(scmp_filter_ctx ctx)
{
	static const int pids[] = {FILTER_INIT_PID, FILTER_LAUNCHER_PID, FILTER_HOLDER_PID};
	static const int by_pid0[] = {SCMP_SYS(kill),
				      SCMP_SYS(tkill),
				      SCMP_SYS(tgkill),
				      SCMP_SYS(rt_sigqueueinfo),
				      SCMP_SYS(rt_tgsigqueueinfo),
				      SCMP_SYS(pidfd_open),
				      SCMP_SYS(process_vm_readv),
				      SCMP_SYS(process_vm_writev),
				      SCMP_SYS(prlimit64),
				      SCMP_SYS(sched_setaffinity),
				      SCMP_SYS(sched_setscheduler),
				      SCMP_SYS(sched_setparam),
				      SCMP_SYS(sched_setattr),
				      SCMP_SYS(migrate_pages),
				      SCMP_SYS(move_pages)};
	static const int by_pid1[] = {SCMP_SYS(tgkill), SCMP_SYS(rt_tgsigqueueinfo),
				      SCMP_SYS(ptrace), SCMP_SYS(setpriority),
				      SCMP_SYS(ioprio_set)};
	int rc = 0;

	for (size_t p = 0; p < sizeof(pids) / sizeof(pids[0]) && rc == 0; p++) {
		int pid = pids[p];

		for (size_t i = 0; i < sizeof(by_pid0) / sizeof(by_pid0[0]) && rc == 0; i++)
			rc = refuse_if_arg(ctx, EPERM, by_pid0[i], 0, pid);
		if (rc == 0)
			rc = refuse_if_arg(ctx, EPERM, SCMP_SYS(kill), 0, -pid);
		for (size_t i = 0; i < sizeof(by_pid1) / sizeof(by_pid1[0]) && rc == 0; i++)
			rc = refuse_if_arg(ctx, EPERM, by_pid1[i], 1, pid);
		for (int sign = 1; sign >= -1 && rc == 0; sign -= 2)
			rc = seccomp_rule_add(
			    ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(fcntl), 2,
			    SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, F_SETOWN),
			    SCMP_A2(SCMP_CMP_MASKED_EQ, 0xffffffffu, (uint32_t)(sign * pid)));
	}
	if (rc == 0)
		rc = refuse_if_arg(ctx, EPERM, SCMP_SYS(setpriority), 0, PRIO_USER);
	if (rc == 0)
		rc = refuse_if_arg(ctx, EPERM, SCMP_SYS(ioprio_set), 0, IOPRIO_WHO_USER);
	/* These name their target through a pointer, which a filter cannot read. */
	if (rc == 0)
		rc = refuse_if_arg(ctx, EPERM, SCMP_SYS(fcntl), 1, F_SETOWN_EX);
	if (rc == 0)
		rc = refuse_if_arg(ctx, EPERM, SCMP_SYS(ioctl), 1, FIOSETOWN);
	if (rc == 0)
		rc = refuse_if_arg(ctx, EPERM, SCMP_SYS(ioctl), 1, SIOCSPGRP);
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(pidfd_send_signal), 0);
	return rc;
}

/* ctx's program in a memfd, rewound; ctx released. */
static int export(scmp_filter_ctx ctx, int rc)
{
	int fd = rc == 0 ? memfd_create("sbxfs-seccomp", MFD_CLOEXEC) : -1;

	if (fd >= 0)
		rc = seccomp_export_bpf(ctx, fd);
	seccomp_release(ctx);
	if (rc < 0 || fd < 0) {
		if (fd >= 0)
			close(fd);
		return rc < 0 ? rc : -errno;
	}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

int filter_bpf_fd(bool reported_too)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int rc;

	if (!ctx)
		return -ENOMEM;
	rc = add_rules(ctx);
	if (rc == 0 && reported_too)
		rc = add_reported_rules(ctx, SCMP_ACT_ERRNO(EPERM));
	if (rc == 0)
		rc = filter_add_setid_rules(ctx);
	if (rc == 0)
		rc = add_launcher_rules(ctx);
	if (rc == 0)
		rc = add_socket_rules(ctx);
	return export(ctx, rc);
}

int filter_notify_bpf_fd(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);

	if (!ctx)
		return -ENOMEM;
	return export(ctx, add_reported_rules(ctx, SCMP_ACT_NOTIFY));
}
