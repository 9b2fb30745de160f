/* The sandbox's seccomp filter (see filter.h). Everything is allowed but what lets a process
 * leave or widen the sandbox: new namespaces, mounts, kernel keyrings, bpf, io_uring,
 * userfaultfd, perf events, module and kexec loading, and faking terminal input. Refusals are
 * EPERM, as an unprivileged process would get; clone3 gets ENOSYS so libc falls back to clone,
 * whose flags a filter can see. */
#include "filter.h"

#include <errno.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

static const unsigned long ns_flags[] = {CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS,
					 CLONE_NEWIPC, CLONE_NEWUSER,   CLONE_NEWPID,
					 CLONE_NEWNET, CLONE_NEWTIME};

static const int denied[] = {
	SCMP_SYS(unshare),        SCMP_SYS(setns),           SCMP_SYS(mount),
	SCMP_SYS(umount2),        SCMP_SYS(pivot_root),      SCMP_SYS(chroot),
	SCMP_SYS(bpf),            SCMP_SYS(keyctl),          SCMP_SYS(add_key),
	SCMP_SYS(request_key),    SCMP_SYS(io_uring_setup),  SCMP_SYS(io_uring_enter),
	SCMP_SYS(io_uring_register), SCMP_SYS(userfaultfd),  SCMP_SYS(perf_event_open),
	SCMP_SYS(kexec_load),     SCMP_SYS(kexec_file_load), SCMP_SYS(init_module),
	SCMP_SYS(finit_module),   SCMP_SYS(delete_module),   SCMP_SYS(open_by_handle_at),
	SCMP_SYS(fsopen),         SCMP_SYS(fsmount),         SCMP_SYS(fspick),
	SCMP_SYS(move_mount),     SCMP_SYS(open_tree),       SCMP_SYS(mount_setattr),
	SCMP_SYS(swapon),         SCMP_SYS(swapoff),         SCMP_SYS(acct),
};

static int add_rules(scmp_filter_ctx ctx)
{
	int rc = 0;

	for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]) && rc == 0; i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), denied[i], 0);
	/* One rule per flag: a masked compare can only ask for all of its bits. */
	for (size_t i = 0; i < sizeof(ns_flags) / sizeof(ns_flags[0]) && rc == 0; i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				      SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				      SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI));
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				      SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX));
	return rc;
}

int filter_bpf_fd(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int fd, rc;

	if (!ctx)
		return -ENOMEM;
	rc = add_rules(ctx);
	if (rc == 0)
		rc = filter_add_setid_rules(ctx);
	fd = rc == 0 ? memfd_create("sbxfs-seccomp", MFD_CLOEXEC) : -1;
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
