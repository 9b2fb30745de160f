/* What term.c and term_ctl.c share about a terminal. All of it under the core lock. */
#ifndef SBX_TERM_PRIV_H
#define SBX_TERM_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "launch.h"
#include "loop.h"
#include "session_child.h"
#include "termemu.h"
#include "termring.h"

enum term_state { TS_IDLE, TS_STARTING, TS_RUNNING, TS_ENDED };

struct term {
	struct session_child c; /* in s->terms */
	struct proc proc;
	enum term_state state;
	char *cmd; /* NULL: the interactive shell */
	size_t cmdlen;
	int master;
	struct loop_fd *lf;
	unsigned rows, cols;
	struct termring ring;
	struct termemu *emu;	    /* the screen, emulated on a thread of its own */
	struct loop_fd *emu_lf;	    /* its fd: a new snapshot, a match, room again */
	bool throttled;		    /* the emulator is behind: the master waits */
	struct loop_timer throttle; /* while throttled: is the emulator stuck? */
	char *in; /* queued input, TERM_IN_MAX bytes */
	size_t inlen;
	bool killed;
	int wstatus;
	int leftovers;
	struct loop_timer grace;
	struct waitq outq;	      /* out readers, exit readers, pollers */
	struct waitq inq;	      /* writers waiting for room */
	struct waitq screenq;	      /* readers of wait, woken by a new snapshot or match */
	char *pattern;		      /* wait's, NULL until written */
	struct loop_timer wait_timer; /* wakes screenq at the earliest deadline of a reader */
};

/* sig now, KILL after the grace unless it was KILL. */
void term_kill(struct term *t, int sig);
/* Writes what the master takes of the input queue. */
void term_flush_input(struct term *t);
/* Whether it can still write output. */
bool term_live(const struct term *t);
/* The mount's caps on terminals ([session] terms_max, term_cells_max), and how long a feed of
 * the emulator may take. */
struct termemu_limits term_limits(void);
/* Any lock but the core's may be held: the screen, with settled once the emulator caught up
 * with the output read so far (or after a second); *broken if the emulator was given up on.
 * Caller unrefs. */
struct termsnap *term_snapshot(struct term *t, bool settled, bool *broken);

#endif
