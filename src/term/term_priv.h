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
#include "termring.h"
#include "termscreen.h"

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
	struct termscreen *screen;
	char *in; /* queued input, TERM_IN_MAX bytes */
	size_t inlen;
	bool killed;
	int wstatus;
	int leftovers;
	struct loop_timer grace;
	struct waitq outq;	      /* out readers, exit readers, pollers */
	struct waitq inq;	      /* writers waiting for room */
	char *pattern;		      /* wait's, NULL until written */
	struct loop_timer wait_timer; /* wakes outq at the earliest deadline of a wait reader */
};

/* sig now, KILL after the grace unless it was KILL. */
void term_kill(struct term *t, int sig);
/* Writes what the master takes of the input queue. */
void term_flush_input(struct term *t);
/* Whether it can still write output. */
bool term_live(const struct term *t);

#endif
