/* What session.c, session_run.c, session_env.c, session_ctl.c, exec.c, exec_kill.c and
 * session_stdin.c share about a session; nothing outside src/session/ includes it. All fields are
 * guarded by the core lock. */
#ifndef SBX_SESSION_PRIV_H
#define SBX_SESSION_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <time.h>

#include "cgroup.h"
#include "config.h"
#include "envlist.h"
#include "checkout.h"
#include "feed.h"
#include "launch.h"
#include "loop.h"
#include "net.h"
#include "run.h"
#include "session_child.h"
#include "session.h"
#include "shell.h"
#include "ticket.h"
#include "waiter.h"

enum op_kind { OP_RUN, OP_ENV, OP_CHDIR, OP_CHECKOUT };
enum shell_state { SH_NONE, SH_STARTING, SH_IDLE, SH_BUSY, SH_DYING };
/* What the session's one timer is counting down to. */
enum timer_phase { TP_NONE, TP_TIMEOUT, TP_GRACE, TP_STUCK };

struct op {
	enum op_kind kind;
	struct run *run;        /* OP_RUN */
	struct envedits edits;  /* OP_ENV */
	char *path;             /* OP_CHDIR */
	struct ticket *ticket;  /* OP_CHDIR */
	struct checkout_req req; /* OP_CHECKOUT, with run for its progress */
	char *rel, *shown;      /* OP_CHECKOUT: target below the workspace, as shown */
	struct checkout_run *git; /* OP_CHECKOUT while it runs */
	TAILQ_ENTRY(op) link;
};

TAILQ_HEAD(op_list, op);
TAILQ_HEAD(run_list, run);

/* A command's stdin: a feed whose pipe the command opens through the launcher. */
struct session_stdin {
	struct feed feed;
	int pending_w;          /* the pipe, until the launcher holds its read end */
	struct hold hold;       /* the launcher holding the read end */
	bool holding;           /* hold sent, HELD not yet back */
};

struct job;
struct term;
struct cgroup_mem_watch;

struct session {
	char id[SESSION_ID_MAX + 1];
	uint64_t serial;
	int refs;
	bool removed;
	struct timespec ctime;
	struct cgroup *cg;
	struct cgroup_mem_watch *oom_watch; /* ends the command the OOM killer hit */
	struct net_client *net;		    /* its proxy listener and log; NULL: no proxy */

	struct shell *sh;
	enum shell_state st;
	unsigned restarts;      /* shells started after the first */
	struct timespec restored; /* when a daemon's start brought it back (saved.c), or 0 */
	bool started_once;
	bool restart_wanted;    /* ctl restart: start a new shell as soon as this one is gone */

	struct op_list queue;
	struct op *current;
	struct run_list runs;   /* history, oldest first; the last is the latest */
	struct run *checkout;   /* the latest checkout */
	unsigned next_checkout;
	unsigned nruns;
	unsigned next_n;

	uint64_t timeout_ms;    /* the session's default */
	uint64_t next_timeout_ms;
	bool next_timeout_set;
	struct loop_timer timer;
	enum timer_phase phase;
	bool stuck_retried;     /* the stuck timer fired once already for this kill */
	struct loop_timer leftover_timer; /* KILL after the grace, for a kill of leftovers only */
	bool grace_hold;        /* the next command waits for a killed command's leftovers */
	uint64_t grace_end_ns;  /* and their KILL then (CLOCK_MONOTONIC) */

	struct session_stdin in;

	/* background processes and terminals, and the last id given to each kind */
	struct session_child_list children[SESSION_CHILD_KINDS];
	unsigned next_child_id[SESSION_CHILD_KINDS];

	struct envlist env;     /* as the shell last reported it */
	struct envlist own_env; /* names set through its env file (NAME=): the root env's lose */
	char *cwd;
	struct ticket *gone;
	struct ticket *ready;   /* a mkdir waiting for the first shell to be up */
	TAILQ_ENTRY(session) link;
};

/* Core lock held: the first shell died before it was up (err: -errno); the session leaves the
 * table and the mkdir waiting on s->ready fails with err. */
void session_start_failed(struct session *s, int err);

struct checkout_run;

/* exec.c: running the queue on the shell; exec_kill.c: ending a command early. */
/* 0, or -errno when the shell cannot be started (nothing changed then). */
int exec_start_shell(struct session *s);
void exec_pump(struct session *s);
void exec_enqueue(struct session *s, struct op *op);
/* The OOM watch's callback (arg: the session). */
void exec_oom(void *arg);
void exec_op_free(struct op *op);
/* Ends an op that will not run; a run gets run_status, and why (with err, an errno or 0) in its
 * stderr and status. */
void exec_op_fail(struct op *op, int run_status, int err, const char *why);
/* Signals the running command (not the shell); -ESRCH if nothing runs. */
int exec_kill(struct session *s, int sig, bool timed_out);
/* With a command running, exec_kill; otherwise signals what earlier commands left behind
 * (background jobs, double forks; not the shell, not background processes of procs/), with
 * KILL after the grace for any other signal. Returns how many processes it signalled. */
int exec_kill_all(struct session *s, int sig);
/* -errno when there was no shell and none can be started. */
int exec_restart(struct session *s);
/* Ends the op in flight and everything queued; the shell is killed. */
void exec_teardown(struct session *s);

/* session_stdin.c */
/* Whether the next command reads a pipe (something is staged, or a writer holds stdin open);
 * without one it reads /dev/null. */
bool session_stdin_wanted(struct session *s);
/* Starts the command's stdin pipe: calls exec_send_run once the launcher holds it. */
void session_stdin_begin(struct session *s);
void session_stdin_end(struct session *s);
/* exec.c: the command can be sent now; path NULL means /dev/null. */
void exec_send_run(struct session *s, const char *stdin_path);
/* exec.c: the command cannot be started as asked (its stdin): it ends with RUN_EXIT_UNRUN and
 * why (err: an errno, or 0) in its stderr and status. */
void exec_unrun(struct session *s, int err, const char *why);

/* session_env.c: an env change in the journal, by its names ("-NAME": unset), never its
 * values (a token is a value); sid NULL: the sandbox-wide env. */
void env_journal(const char *sid, const struct envedits *ed);

#endif
