/* What job.c and job_io.c share about a background process. All of it under the core lock. */
#ifndef SBX_JOB_PRIV_H
#define SBX_JOB_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "envlist.h"
#include "feed.h"
#include "launch.h"
#include "loop.h"
#include "session_child.h"

enum job_timer { JT_NONE, JT_TIMEOUT, JT_GRACE };

struct job {
	struct session_child c; /* in s->jobs */
	struct run *run; /* the latest start */
	unsigned starts;
	bool running;
	bool tty;      /* starts on a pty: out[0] is then its master, out[1] unused */
	int term_sig;  /* the signal it died of, 0 if it exited */
	int leftovers; /* what its tree still had when it ended (killed then) */
	struct proc proc;
	bool settled; /* start_lock: the latest start's pid is known, or it failed (job_start) */
	int out[2];
	struct loop_fd *out_lf[2];
	struct feed in;
	uint64_t timeout_ms; /* ctl timeout, for this process */
	struct loop_timer timer;
	enum job_timer phase;
	struct waitq readyq;
	struct loop_timer ready_timer;
};

/* Opens the pipes and cgroup files of a start: fds[0..2] and cgfds for the child, out[] and
 * *in_w for us. On failure -errno, and nothing stays open. A tty start needs only the cgroup
 * files: the launcher makes the pty. */
int job_io_open(struct job *j, int fds[3], int cgfds[4], int *ncg, int *in_w);
/* Asks the launcher to start argv with env (on a pty if j->tty) and what job_io_open opened,
 * and watches its output and feeds its stdin from then on. */
void job_io_launch(struct job *j, char *argv[], struct envlist *env, int fds[3], int cgfds[4],
		   int ncg, int in_w);
/* At its exit: takes what is left of its output into the spools, closes its stdio. */
void job_io_finish(struct job *j);

#endif
