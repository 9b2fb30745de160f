/* sbxfs-netproxy's confinement, set before it reads anything from the sandbox: not dumpable (no
 * ptrace or /proc/PID/mem by another process of its user), no new privileges, no core files,
 * and a seccomp filter that refuses with EPERM what a proxy never does:
 * running programs, making processes (threads only), writing or changing files, namespaces,
 * mounts, tracing, kernel interfaces, and sockets other than IP, Unix (the resolver's nscd) and
 * netlink (getaddrinfo asks for the host's addresses). The resolver's own reads of /etc and its
 * libraries stay allowed, so a deny list, not an allow list that a glibc update would break. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "proxy_priv.h"

static const char *const refused[] = {
    "execve",
    "execveat",
    "fork",
    "vfork",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "fsopen",
    "fsmount",
    "fsconfig",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "open_by_handle_at",
    "name_to_handle_at",
    "chmod",
    "fchmod",
    "fchmodat",
    "chown",
    "fchown",
    "fchownat",
    "lchown",
    "unlink",
    "unlinkat",
    "rename",
    "renameat",
    "renameat2",
    "mkdir",
    "mkdirat",
    "rmdir",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "truncate",
    "ftruncate",
    "mknod",
    "mknodat",
    "creat",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    "acct",
    "swapon",
    "swapoff",
    "reboot",
    "settimeofday",
    "clock_settime",
    "adjtimex",
    "setuid",
    "setgid",
    "setreuid",
    "setregid",
    "setresuid",
    "setresgid",
    "setgroups",
    "personality",
    "memfd_create",
    "memfd_secret",
};

static int rule_open_readonly(scmp_filter_ctx ctx, const char *name, unsigned arg)
{
	int nr = seccomp_syscall_resolve_name(name);

	if (nr == __NR_SCMP_ERROR)
		return 0;
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
				SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, O_WRONLY | O_RDWR, O_WRONLY)) ?:
	       seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
				SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, O_WRONLY | O_RDWR, O_RDWR)) ?:
	       seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
				SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, O_CREAT, O_CREAT));
}

static int build(scmp_filter_ctx ctx)
{
	static const int families[] = {AF_INET, AF_INET6, AF_UNIX, AF_NETLINK};
	int rc = 0;

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]) && rc == 0; i++) {
		int nr = seccomp_syscall_resolve_name(refused[i]);

		if (nr != __NR_SCMP_ERROR)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
	}
	/* Threads are clones with CLONE_THREAD; clone3's flags are out of a filter's sight, so
	 * it gets ENOSYS and glibc falls back to clone. */
	rc = rc
		 ?: seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				     SCMP_CMP(0, SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
	rc = rc ?: seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	rc = rc ?: rule_open_readonly(ctx, "open", 1);
	rc = rc ?: rule_open_readonly(ctx, "openat", 2);
	rc = rc ?: seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
	/* socket(): only the families above; each refused one is a rule, as libseccomp has no
	 * "not in" comparison: families are small numbers, all below AF_MAX. */
	for (int fam = 0; fam < AF_MAX && rc == 0; fam++) {
		bool ok = false;

		for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++)
			ok |= families[i] == fam;
		if (!ok)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket),
					      1, SCMP_CMP(0, SCMP_CMP_EQ, (scmp_datum_t)fam));
	}
	rc = rc
		 ?: seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
				     SCMP_CMP(0, SCMP_CMP_GE, (scmp_datum_t)AF_MAX));
	return rc;
}

int proxy_confine(unsigned fds_max)
{
	struct rlimit nofile = {fds_max, fds_max}, zero = {0, 0};
	scmp_filter_ctx ctx;
	int rc;

	if (prctl(PR_SET_DUMPABLE, 0) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	/* The daemon raised the hard limit before it dropped to this user; never above it. */
	if (setrlimit(RLIMIT_NOFILE, &nofile) < 0) {
		getrlimit(RLIMIT_NOFILE, &nofile);
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	/* No RLIMIT_FSIZE of 0: its stderr may be the daemon's log file, and a warning would
	 * then kill it (SIGXFSZ); the filter keeps it from opening anything for writing. */
	if (setrlimit(RLIMIT_CORE, &zero) < 0)
		return -errno;
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return -ENOMEM;
	rc = build(ctx);
	rc = rc ?: seccomp_load(ctx);
	seccomp_release(ctx);
	return rc < 0 ? rc : rc ? -EINVAL : 0;
}
