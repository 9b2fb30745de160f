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

int launch_init(const char *launcher_path);
/* Takes ownership of fds (closed once sent). Returns 0 or -errno. */
int launch_start(struct proc *p, const char *cwd, char *const argv[], char *const envp[],
		 int *fds, int nfds);
void launch_signal(struct proc *p, int sig, bool group);
/* The caller forgets p: no callback will come for it. */
void launch_detach(struct proc *p);
/* Closes the socket: the launcher kills everything and exits; waits for it (bounded). */
void launch_shutdown(void);

#endif
