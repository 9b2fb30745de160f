/* The system calls the sandbox's filter refuses and reports (filter.h): the launcher's filter
 * has the kernel hold each such call and ask the daemon through a listener fd; the daemon
 * answers EPERM, as the plain filter would, after noting which call, which process and which
 * of the sandbox's groups it is in. Allowed calls never come here. */
#ifndef SBX_SYSNOTIFY_H
#define SBX_SYSNOTIFY_H

#include <sys/types.h>

struct sys_refusal {
	const char *call;  /* the call's name ("mount"), or its number */
	pid_t pid;	   /* as the sandbox sees it (0: unknown) */
	pid_t host_pid;
	const char *comm;  /* its command name, as the process set it */
	const char *group; /* its group below the sandbox's ("s3": session serial 3), or "" */
};

/* Where each refusal goes: called on the loop thread, core lock held. */
void sysnotify_set_report(void (*fn)(const struct sys_refusal *r));
/* Core lock held: fd, the listener a new launcher sent, replaces the last one. */
void sysnotify_take(int fd);
/* Core lock held: stops listening (the calls still held get ENOSYS from the kernel). */
void sysnotify_stop(void);

#endif
