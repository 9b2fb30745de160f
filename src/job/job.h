/* Background processes ("jobs"): named processes of a session, started with its env and cwd
 * of that moment, beside (never behind) its foreground commands. Each has its own cgroup below
 * the session's, so it dies with its whole tree when killed, and foreground kills never reach
 * it. Every function takes the core lock itself. */
#ifndef SBX_JOB_H
#define SBX_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "run.h"
#include "session.h"
#include "waiter.h"

struct job;

struct job_info {
	char name[SESSION_ID_MAX + 1];
	unsigned id;
	char session[SESSION_ID_MAX + 1];
	uint64_t serial;
};

/* -EINVAL for a bad name, -EEXIST, -ENOENT if the session is gone. */
int job_create(struct session *s, const char *name);
/* Kills it (with its tree) if running and forgets it; -ENOENT. */
int job_remove(struct session *s, const char *name);
struct job *job_find(struct session *s, const char *name);
struct job *job_find_id(struct session *s, unsigned id);
void job_unref(struct job *j);
const char *job_name(const struct job *j);
/* Its group (NULL without cgroups), valid while a reference to j is held. */
struct cgroup *job_cgroup(const struct job *j);
unsigned job_id(const struct job *j);
/* The jobs of one session, or of every session (s NULL); caller frees *v. */
size_t job_list(struct session *s, struct job_info **v);

/* -EBUSY while it runs. */
int job_idle(struct job *j);
/* Whether its next start runs it on a pty (its stdin, stdout and stderr, its controlling tty):
 * -EBUSY while it runs, -ENOENT once removed. */
int job_set_tty(struct job *j, bool on);
bool job_tty(struct job *j);
/* Starts it (again), its start number to *n if n is given: -EBUSY while it runs, -EINVAL for
 * a NUL byte. */
int job_start(struct job *j, const char *cmd, size_t len, unsigned *n);
/* The latest run (referenced), NULL before the first start. */
struct run *job_run(struct job *j);
/* Signals its whole tree; -ESRCH if it does not run. */
int job_signal(struct job *j, int sig);
/* "kill [SIGNAL]" (then KILL after the grace) or "timeout MS"; -EINVAL, -ESRCH. j NULL:
 * whether it would take the line (0 or -EINVAL), touching nothing. */
int job_ctl(struct job *j, const char *line, size_t len);
/* A procs/ctl line, "kill [SIGNAL]", for every running process of s, or of every session (s
 * NULL): SIGNAL (default TERM), then KILL after the grace. Nothing running is no error.
 * -EINVAL for any other line, -ENOENT if s is gone. apply false: only checks the line. */
int jobs_ctl(struct session *s, const char *line, size_t len, bool apply);
char *job_status(struct job *j);
/* TCP ports its tree listens on, one per line. */
char *job_ports(struct job *j);
/* 0 and the first listening port, 0 and port 0 once it ended, or -EAGAIN (w queued). */
int job_ready(struct job *j, unsigned *port, struct waiter *w);

int job_stdin_open(struct job *j);
void job_stdin_close(struct job *j);
ssize_t job_stdin_write(struct job *j, const char *buf, size_t len, struct waiter *w);

#endif
