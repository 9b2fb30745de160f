/* The daemon's side of the launcher: starting it, asking it to start and signal processes, and
 * turning its reports into callbacks. All calls with the core lock held. */
#ifndef SBX_LAUNCH_H
#define SBX_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

struct proc {
	uint64_t id;
	pid_t pid;           /* 0 until the launcher says it started */
	int start_err;       /* errno when the launcher could not start it (it then exits 127) */
	/* launch_start_pty: the pty's master (nonblocking, now the owner's) when it started;
	 * loop thread, core lock held, before any on_exit. */
	void (*on_pty)(struct proc *p, int master);
	/* Optional: the launcher reported its pid (p->pid); loop thread, core lock held. */
	void (*on_started)(struct proc *p);
	/* Loop thread, core lock held. status is a wait status. */
	void (*on_exit)(struct proc *p, int status);
	void *arg;
	TAILQ_ENTRY(proc) link;
};

/* An fd the launcher's holder keeps open so a sandboxed process can open /proc/PID/fd/N. */
struct hold {
	uint64_t id;
	/* Loop thread, core lock held; fdnum < 0 if the launcher could not take it. */
	void (*on_held)(struct hold *h, int fdnum, pid_t holder_pid);
	TAILQ_ENTRY(hold) link;
};

struct cgroup;
struct identity;

/* How the launcher is started. The pointers must stay valid while the daemon runs. */
struct launch_spec {
	const char *launcher;      /* host path of sbxfs-launcher */
	char **bwrap_argv;         /* NULL: exec the launcher without a sandbox */
	int pass_fds[5];           /* become fds 4, 5, ... of bwrap (its argv names them) */
	int npass;
	const struct identity *id; /* drop to it before exec; NULL: stay as the daemon */
	struct cgroup *cg;         /* joined before exec; may be NULL */
	int netns;		   /* a network namespace joined before exec; -1: the daemon's */
	/* In the child, as root, before bwrap: what its mounts are to be. Async-signal-safe; -errno
	 * stops the start. May be NULL. */
	int (*child_setup)(void);
	/* Core lock held, before a restart that follows a failed start: undo what a command can
	 * do to keep the sandbox from starting. May be NULL. */
	void (*repair)(void);
};

/* Starts the launcher and waits for its hello; 0 or -errno with a reason. */
int launch_init(const struct launch_spec *spec, char *err, size_t errlen);
/* Takes ownership of fds and cgfds (closed once sent): the child's fds 0..nfds-1, and the
 * cgroup.procs files it joins before exec. */
void launch_start(struct proc *p, const char *cwd, char *const argv[], char *const envp[],
		  int *fds, int nfds, int *cgfds, int ncg);
/* As launch_start, on a new pty of rows x cols made in the sandbox (its devpts): the
 * program's stdio and controlling tty; the master comes to p->on_pty. */
void launch_start_pty(struct proc *p, const char *cwd, char *const argv[], char *const envp[],
		      int *cgfds, int ncg, unsigned rows, unsigned cols);
/* Takes ownership of fd. */
void launch_hold(struct hold *h, int fd);
/* The launcher closes the held fd; no callback comes for h after this. */
void launch_drop(struct hold *h);
void launch_signal(struct proc *p, int sig, bool group);
/* sig to p's tree: its cgroup cg, or without one (NULL) its session; never lost to a start
 * still under way. */
void launch_signal_tree(struct proc *p, struct cgroup *cg, int sig);
/* The caller forgets p: no callback will come for it. */
void launch_detach(struct proc *p);
/* Core lock held: the daemon's own child pid (not the launcher's) is reaped here too;
 * cb(arg, wait status) runs on the loop thread with the core lock held when it exits. */
void launch_watch_child(pid_t pid, void (*cb)(void *arg, int status), void *arg);
/* The sandbox's own network namespace: a new descriptor of it (the caller closes it) or
 * -ENOENT (the launcher is down, or the sandbox has the daemon's network), and in *gen its
 * generation, which changes whenever the namespace does (a launcher restart). Any thread. */
int launch_netns(unsigned *gen);
/* The generation launch_netns would give now. Any thread. */
unsigned launch_netns_gen(void);
/* Core lock held: the launcher has failed to start more than once in a row, and is not up. */
bool launch_failing(void);
/* The daemon is stopping: the launcher's death is no longer logged or repaired. */
void launch_stopping(void);
/* Closes the socket: the launcher kills everything and exits; waits for it (bounded). */
void launch_shutdown(void);
/* The daemon's last step, after the loop stopped: waits (about a second at most) for every
 * child left, the watchdog and what the subreaper inherited, so that none is left a zombie
 * for init to reap. */
void launch_reap_all(void);

#endif
