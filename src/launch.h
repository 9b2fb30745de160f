/* The daemon's side of the launcher: starting it, asking it to start and signal processes, and
 * turning its reports into callbacks. All calls with the core lock held. */
#ifndef SBX_LAUNCH_H
#define SBX_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

struct proc {
	uint64_t id;
	pid_t pid;           /* 0 until the launcher says it started */
	/* Loop thread, core lock held. status is a wait status. */
	void (*on_exit)(struct proc *p, int status);
	void *arg;
	TAILQ_ENTRY(proc) link;
};

/* An fd the launcher keeps open so a sandboxed process can open /proc/PID/fd/N. */
struct hold {
	uint64_t id;
	/* Loop thread, core lock held; fdnum < 0 if the launcher could not take it. */
	void (*on_held)(struct hold *h, int fdnum, pid_t launcher_pid);
	TAILQ_ENTRY(hold) link;
};

int launch_init(const char *launcher_path);
/* Takes ownership of fds and cgfds (closed once sent): the child's fds 0..nfds-1, and the
 * cgroup.procs files it joins before exec. */
void launch_start(struct proc *p, const char *cwd, char *const argv[], char *const envp[],
		  int *fds, int nfds, int *cgfds, int ncg);
/* Takes ownership of fd. */
void launch_hold(struct hold *h, int fd);
/* The launcher closes the held fd; no callback comes for h after this. */
void launch_drop(struct hold *h);
void launch_signal(struct proc *p, int sig, bool group);
/* The caller forgets p: no callback will come for it. */
void launch_detach(struct proc *p);
/* Closes the socket: the launcher kills everything and exits; waits for it (bounded). */
void launch_shutdown(void);

#endif
