/* A run: one command submitted to a session, with its text, output spools and exit status.
 * Reference-counted: the session and every open file of it hold one. */
#ifndef SBX_RUN_H
#define SBX_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>
#include <time.h>

#include "spool.h"
#include "waiter.h"

enum run_state { RUN_QUEUED, RUN_RUNNING, RUN_DONE };
/* RUN_OUTPUT: stdout and stderr interleaved in the order the daemon read them. */
enum run_stream { RUN_STDOUT, RUN_STDERR, RUN_OUTPUT };
#define RUN_STREAMS 3

struct run {
	int refs;
	unsigned n;
	char *cmd;
	size_t cmdlen;
	enum run_state state;
	int status; /* exit status, 128+N for signal N; valid when done */
	struct spool out[RUN_STREAMS];
	struct spool_set budget; /* out[] in the spool budget */
	struct waitq doneq;
	struct timespec submitted, started, ended;
	uint64_t timeout_ms;  /* in force for this run, 0 = none */
	bool started_ack;     /* the shell said it started it */
	bool timed_out;
	bool killed;          /* by a kill (ctl, restart, rmdir) */
	bool ending;          /* ended, not yet visible as done: the loop catches up first */
	int kill_sig;
	pid_t shell_pid;      /* the shell that ran it */
	uint64_t oom_mark;    /* its group's OOM kills when it started */
	uint64_t oom_kills;   /* OOM kills in its group while it ran */
	uint64_t pids_mark;   /* forks its group and the sandbox's refused at pids.max, at start */
	uint64_t pids_hits;   /* ... while it ran */
	bool oom_ended;       /* killed whole after an OOM kill in it */
	char *error;          /* why sbxfs could not run it as asked (status "error"), or NULL */
	const char *jkind;    /* its events' kind in the journal ("cmd", "proc"), NULL: none */
	char *jsid;           /* its session's id, for the session's journal */
	const char *jkey;     /* and one more field of its events: its cwd, its process... */
	char *jvalue;
	TAILQ_ENTRY(run) hist; /* the session's history */
};

/* Exit status of a command sbxfs could not set up: refused at submission (its spools), or its
 * stdin at start. A shell that cannot start gives 127, as bash does for a missing program. */
#define RUN_EXIT_UNRUN 126
#define RUN_EXIT_NOSHELL 127

/* spool_base is a path prefix; the run adds ".out", ".err" and ".all". On failure NULL, *err
 * set. */
struct run *run_new(unsigned n, const char *cmd, size_t cmdlen, const char *spool_base,
		    uint64_t output_cap, int *err);
/* A run that is done before it starts, without spools: a command refused with err (errno)
 * because what says (e.g. "cannot create its output spool"). Exit RUN_EXIT_UNRUN. */
struct run *run_refused(unsigned n, const char *cmd, size_t cmdlen, int err, const char *what);
void run_ref(struct run *r);
void run_unref(struct run *r);

/* Called with the core lock held when a run starts and when a started run ends (before its end
 * is visible); the layer above learns from them when the sandbox may be changing files. end
 * returns true when what the run changed is not all visible yet: the run then stays running to
 * every reader until the loop's wake hook has run once more (loop_after_sync). */
void run_set_hooks(void (*begin)(void), bool (*end)(void));

/* Core lock held. run_end records the status at once; the end is visible at once or, when the
 * end hook says so, a moment later from the loop thread. */
void run_begin(struct run *r);
/* Core lock held: r's start and end go to the journal as kind (static) ".start" and ".end",
 * in sid's session (or none), with the field key (static): value; at once if r is done. */
void run_journal_as(struct run *r, const char *kind, const char *sid, const char *key,
		    const char *value);
/* run_journal.c: its events, from run_begin and when its end is published. */
void run_journal_begin(struct run *r);
void run_journal_end(struct run *r);
void run_end(struct run *r, int status);
/* Records why the run could not go as asked ("EMFILE: what: Too many open files"; err 0: just
 * what); the first reason is kept. */
void run_set_error(struct run *r, int err, const char *what);
int run_status_from_wait(int wstatus);
/* Core lock held: why it could not go as asked (run_set_error, or a spool that could not be
 * written), or NULL; caller frees. */
char *run_error_text(const struct run *r);
/* Core lock held: the run's status file, "key value" lines; caller frees. */
char *run_describe(const struct run *r);
/* Takes the core lock: as run_describe. */
char *run_status(struct run *r);

/* Takes the core lock. Finds what a read at off may return: 0 with *fd and *n set (n 0 means
 * EOF), or -EAGAIN when the reader must wait (w queued if given, woken when that changes). */
int run_read_extent(struct run *r, enum run_stream s, off_t off, size_t size, int *fd, size_t *n,
		    struct waiter *w);
/* Takes the core lock: 0 and *status once done, else -EAGAIN (w queued if given). */
int run_wait_exit(struct run *r, int *status, struct waiter *w);
/* Takes the core lock: the stream's size and mtime so far. */
void run_stream_stat(struct run *r, enum run_stream s, off_t *size, struct timespec *mtime);
/* Takes the core lock: true if a read of the stream at off would not block; else w (if given)
 * is queued to learn when it would. */
bool run_poll(struct run *r, enum run_stream s, off_t off, struct waiter *w);

#endif
