/* The launcher's own seccomp filter (notifyfilter.h). */
#include "notifyfilter.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A program of at most the kernel's BPF_MAXINSNS instructions. */
#define PROG_MAX (4096 * sizeof(struct sock_filter))

int notify_filter_install(int fd)
{
	struct sock_filter *insns = malloc(PROG_MAX);
	struct sock_fprog prog;
	size_t len = 0;
	ssize_t n;
	int listener;

	if (!insns)
		return -ENOMEM;
	while (len < PROG_MAX && (n = read(fd, (char *)insns + len, PROG_MAX - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (len == 0 || len % sizeof(struct sock_filter) || len >= PROG_MAX) {
		free(insns);
		return -EINVAL;
	}
	prog.len = (unsigned short)(len / sizeof(struct sock_filter));
	prog.filter = insns;
	/* bwrap set it already (its own filter needs it); said again, as the kernel requires */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		free(insns);
		return -errno;
	}
	listener = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
				SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	free(insns);
	return listener < 0 ? -errno : listener;
}
