/* Terminals: programs of a session run on a pty made in the sandbox, each in its own cgroup
 * below the session's, with their output kept in a ring (termring.h) and rendered by an
 * emulator (termscreen.h). Started by their cmd or their first input; killed with their whole
 * tree when they end or are removed. Every function takes the core lock itself. */
#ifndef SBX_TERM_H
#define SBX_TERM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "session.h"
#include "waiter.h"

/* Bytes of input queued for a terminal that has not read them yet. */
#define TERM_IN_MAX   (64u << 10)
#define TERM_ROWS_MAX 1000u
#define TERM_COLS_MAX 1000u

struct term;
struct termemu_watch;

struct term_info {
	char name[SESSION_ID_MAX + 1];
	unsigned id;
};

/* -EINVAL for a bad name, -EEXIST, -ENOENT if the session is gone, -ENOSPC past the mount's
 * caps ([session] terms_max, term_cells_max). */
int term_create(struct session *s, const char *name);
/* Kills it with its tree and forgets it; -ENOENT. */
int term_remove(struct session *s, const char *name);
struct term *term_find(struct session *s, const char *name);
struct term *term_find_id(struct session *s, unsigned id);
void term_unref(struct term *t);
const char *term_name(const struct term *t);
unsigned term_id(const struct term *t);
/* Caller frees *v. */
size_t term_list(struct session *s, struct term_info **v);

/* Starts cmd (a shell line; NULL: the session's shell, interactive): -EBUSY once started,
 * -EINVAL for a NUL byte, -ENOENT if removed. */
int term_start(struct term *t, const char *cmd, size_t len);
/* 0 while cmd may still be written, -EBUSY once it started, -ENOENT once removed. */
int term_cmd_settable(struct term *t);
/* The command it was started with ("" before, or for the interactive shell). */
char *term_cmd(struct term *t, size_t *len);
/* Queues bytes for the pty (starting the shell if nothing started yet): how many were taken,
 * -EAGAIN when the queue is full (w, if given, is woken when there is room), -EIO once it
 * ended, -ENOENT once removed. */
ssize_t term_input(struct term *t, const char *buf, size_t len, struct waiter *w);
/* Output from *off (raised to the oldest byte held): 0 and *n bytes (0: it ended), or -EAGAIN
 * at the end while it may still write (w queued if given). */
int term_out_read(struct term *t, uint64_t *off, char *buf, size_t size, size_t *n,
		  struct waiter *w);
/* Whether a read at pos would not wait; else w (if given) is queued. */
bool term_out_poll(struct term *t, uint64_t pos, struct waiter *w);
uint64_t term_out_end(struct term *t);
/* The screen as text (termsnap_text), with settled once the emulator caught up with the output
 * read so far (it waits a second at most), else as last drawn; caller frees. */
char *term_screen(struct term *t, size_t *len, bool settled);
/* "ROWS COLS" with an optional newline, ROWS from 1 and COLS from 2 (libvterm's narrowest, see
 * termscreen.h) to 1000: -EINVAL for anything else (nothing changes). */
int term_size_parse(const char *text, size_t len, unsigned *rows, unsigned *cols);
/* -ENOSPC past [session] term_cells_max (nothing changes), -ENOENT once removed. */
int term_resize(struct term *t, unsigned rows, unsigned cols);
char *term_size_text(struct term *t);
/* "kill [SIGNAL]", "interrupt", "eof": -EINVAL (checked before anything applies), -ESRCH
 * when it does not run. t NULL: only check the line. */
int term_ctl(struct term *t, const char *line, size_t len);
/* Its exit status once it ended (as for background processes), or -EAGAIN (w queued);
 * -ENOENT if it was removed without ever starting. */
int term_wait_exit(struct term *t, int *status, struct waiter *w);
/* Its cursor as term_screen's with settled. */
char *term_status(struct term *t, bool settled);
/* wait: the pattern last written (rx.h's syntax, kept as text; NULL: none), and how long a
 * read of wait may take ([session] term_wait_ms). term_set_pattern: -EINVAL for a pattern rx
 * refuses, or with a newline other than a last one (which is not part of it). */
uint64_t term_wait_ms(void);
int term_set_pattern(struct term *t, const char *text, size_t len);
char *term_pattern(struct term *t);
/* A reader of wait: the pattern of now, matched against each new screen off the loop thread
 * (-EINVAL if no pattern was written). Closed before the terminal's reference is dropped. */
int term_watch_open(struct term *t, struct termemu_watch **w);
void term_watch_close(struct termemu_watch *w);
/* Matches the screen of now on the calling thread: never call it on the core loop's. */
void term_watch_scan(struct termemu_watch *w);
/* Cheap, for any thread: 0 and *line (caller frees) once a line matched; 1 once nothing will
 * match (the terminal was removed, or ended and its last screen did not match); -ETIMEDOUT
 * once deadline_ns (CLOCK_MONOTONIC) passed; else -EAGAIN, with w (if given) queued until the
 * screen changes or the deadline. */
int term_watch_poll(struct term *t, struct termemu_watch *tw, uint64_t deadline_ns, char **line,
		    struct waiter *w);

#endif
