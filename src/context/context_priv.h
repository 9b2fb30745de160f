/* What context.c (the table, attributes, the queue of cells) and context_driver.c (the driver
 * process and its frames) share about a context. All of it under the core lock. */
#ifndef SBX_CONTEXT_PRIV_H
#define SBX_CONTEXT_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "cell.h"
#include "context.h"
#include "context_frame.h"
#include "envlist.h"
#include "json.h"
#include "launch.h"
#include "loop.h"
#include "net.h"

enum ctx_lang { LANG_PYTHON, LANG_JAVASCRIPT, LANG_TYPESCRIPT };
enum drv_state { DRV_NONE, DRV_STARTING, DRV_READY };
/* Why the driver is being killed: what its running cell then says. */
enum drv_kill { DK_NONE, DK_KILLED, DK_TIMEOUT, DK_PROTOCOL };
enum ctx_timer { CT_NONE, CT_TIMEOUT, CT_GRACE };

/* Bytes of what the driver writes outside any cell kept to explain a failed start. */
#define DRV_NOTE_MAX 2048

struct context_driver {
	enum drv_state st;
	bool running; /* the process is there (its exit not yet seen) */
	bool exiting; /* its exit is being handled: nothing is sent to it */
	struct proc proc;
	int req_w, ev_r, out_r[2];
	struct loop_fd *req_lf, *ev_lf, *out_lf[2];
	struct ctx_reader rd;
	struct jbuf wbuf; /* requests not yet written */
	size_t woff;
	enum drv_kill kill;
	char *kill_why;		 /* a protocol violation's description */
	char note[DRV_NOTE_MAX]; /* its output outside cells (why it did not start) */
	size_t notelen;
};

struct context {
	int refs;
	char name[CONTEXT_NAME_MAX + 1];
	uint32_t serial;
	bool removed;
	struct timespec ctime;
	enum ctx_lang lang;
	char *cwd;
	struct envedits env; /* applied over the sandbox's environment */
	bool submitted;	     /* a cell was: language, cwd and env are fixed */
	uint64_t timeout_ms;
	struct cgroup *cg;
	struct net_client *net; /* its proxy listener and log; NULL: no proxy */
	struct context_driver drv;
	unsigned starts;	       /* drivers started */
	bool want_restart;	       /* ctl restart: a fresh driver even without cells */
	TAILQ_HEAD(cellq, cell) cells; /* history and queue, oldest first */
	unsigned ncells, next_n;
	struct cell *current; /* running on the driver */
	bool interrupted;     /* the current cell got a ctl interrupt */
	bool timed_out;	      /* the current cell hit its timeout */
	uint64_t oom_seen;    /* its group's OOM kills when the last driver ended */
	struct loop_timer timer;
	enum ctx_timer phase;
	TAILQ_ENTRY(context) link;
};

extern const struct config *ctx_cfg;
extern const struct identity *ctx_owner;
extern char *ctx_spool_dir;

/* context.c */
void context_ref(struct context *c);
/* The environment its driver starts with (init'ed here). */
void context_env(struct context *c, struct envlist *env);

/* context_run.c */
/* Runs the next queued cell, starting a driver if needed. */
void context_pump(struct context *c);
/* The driver said ready, or sent an event about the current cell. */
void context_event(struct context *c, struct ctx_event *ev);
/* The driver is gone (wait status); its output was drained into the current cell. */
void context_driver_gone(struct context *c, int wstatus);

/* context_driver.c */
/* The host path of a language's driver and the program it needs; -ENOENT if either is
 * missing. Caller frees *path. */
int context_driver_resolve(enum ctx_lang lang, char **path);
/* Starts the driver (env: its environment); -errno if it cannot. */
int context_driver_start(struct context *c, struct envlist *env);
/* Sends a run request for code. */
void context_driver_send_run(struct context *c, const char *code, size_t len);
void context_driver_signal(struct context *c, int sig);
/* It broke the protocol (why: what it sent): killed, and its cell says so. */
void context_driver_violation(struct context *c, const char *why);
/* Kills its whole tree (why: what the running cell says); its exit comes later. */
void context_driver_kill(struct context *c, enum drv_kill why);
/* Keeps an error it sent before it was ready, to say why it did not come up. */
void context_driver_note(struct context *c, const char *name, const char *value);
/* Moves what its pipes hold into the current cell's spools (or the note). */
void context_driver_drain(struct context *c);
void context_driver_set_dir(const char *self_exe);
/* Unmount: kills it and forgets it at once (no exit callback will come). */
void context_driver_abandon(struct context *c);

#endif
