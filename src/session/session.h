/* Sessions: a named shell with its own env and cwd, a FIFO of work (commands, env edits, cd),
 * and the latest run. Every function takes the core lock itself unless it says otherwise. */
#ifndef SBX_SESSION_H
#define SBX_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "config.h"
#include "envlist.h"
#include "run.h"
#include "ticket.h"

#define SESSION_ID_MAX	64
#define SESSION_DEFAULT "default"
#define SESSION_CMD_MAX (1u << 20)
/* Sessions made in a daemon's life: inode numbers carry the serial (29 bits, fs/base/ino.h).
 * Past it, a new session is ENOSPC. */
#define SESSION_SERIAL_MAX ((1ull << 29) - 1)

struct session;

struct session_info {
	char id[SESSION_ID_MAX + 1];
	uint64_t serial;
};

struct identity;

/* workspace: the workspace as commands see it (their first cwd, and HOME unless set); id: the
 * sandbox's user, who must own what commands open (their stdin pipes), NULL for the daemon's. */
void sessions_init(const struct config *cfg, const char *spool_dir, const char *workspace,
		   const struct identity *id);
/* Ends every session and its shell; used at unmount. */
void sessions_shutdown(void);

bool session_id_valid(const char *id, size_t len);
/* 0 and *out (referenced, may be NULL) or -EINVAL / -EEXIST / -errno (its shell cannot be
 * started: descriptors, memory; nothing of it remains). With ready, *ready is a ticket done with
 * 0 once the shell is up, or with -errno if it died at start, and then the session is gone. */
int session_create(const char *id, struct session **out, struct ticket **ready);
/* Creates a session with a fresh id, written to id (SESSION_ID_MAX + 1 bytes); errors and
 * *ready as session_create. */
int session_clone(char *id, struct ticket **ready);
/* -ENOENT, -EBUSY for the default session; else 0 and a ticket done once its shell is gone. */
int session_remove(const char *id, struct ticket **gone);
struct session *session_find(const char *id);
struct session *session_find_serial(uint64_t serial);
void session_ref(struct session *s);
void session_unref(struct session *s);
/* Snapshot of the sessions, sorted by creation; caller frees *v. */
size_t session_list(struct session_info **v);

/* What a session's children (job/, term/) start with: the config, the sandbox's user (NULL: the
 * daemon's) and the directory of the spools. Set by sessions_init. */
extern const struct config *session_cfg;
extern const struct identity *session_owner;
extern char *session_spool_dir;

const char *session_id(const struct session *s);
uint64_t session_serial(const struct session *s);
/* Core lock held: whether the session left the table (rmdir, unmount). */
bool session_removed_locked(const struct session *s);
/* Core lock held: the id of the live session with that serial, or NULL. */
const char *session_id_by_serial_locked(uint64_t serial);
/* Core lock held: the directory the next command starts in (no newline; the session owns it). */
const char *session_cwd_locked(const struct session *s);
/* Core lock held: the environment the next command would start with. */
void session_next_env(struct session *s, struct envlist *next);
struct timespec session_ctime(const struct session *s);
/* Its proxy listener and its part of the network log (net.h); NULL without a proxy. */
const struct net_client *session_net(const struct session *s);
/* Its group (NULL without cgroups), valid while a reference to s is held and the sessions
 * are not shut down. */
struct cgroup *session_cgroup(const struct session *s);

/* Queues a command; its run number goes to *n if n is given. -EINVAL for a NUL byte, -EFBIG
 * over SESSION_CMD_MAX, -ENOENT if removed. */
int session_submit(struct session *s, const char *cmd, size_t len, unsigned *n);
/* The latest submitted run (referenced), or NULL before the first command. */
struct run *session_latest(struct session *s);
/* NAME=VALUE lines the next command starts with; caller frees. */
char *session_env(struct session *s, size_t *len);
/* The env edit lines that take a new session's env to this one's next env (what commands
 * exported and what was written to its env; not the shell's PWD, OLDPWD, SHLVL and _, nor the
 * daemon's proxy names): what a restart keeps of it. Caller frees. */
char *session_env_delta(struct session *s, size_t *len);
/* Applies env edit lines; -EINVAL on any bad line, -EFBIG past the env bounds (see
 * session_env_check): then nothing changes. */
int session_setenv(struct session *s, const char *buf, size_t len);
/* -EFBIG if the edits would set a variable over [session] env_value_max, or take the env
 * the next command starts with over env_max (and further from it). */
int session_env_check(struct session *s, const struct envedits *ed);
/* [session] env_value_max. */
size_t session_env_value_max(void);
/* The directory the next command starts in, with a newline; caller frees. */
char *session_cwd(struct session *s, size_t *len);
/* Queues a cd; *t is done with 0, -ENOENT, -ENOTDIR, -EACCES or -EIO. */
int session_chdir(struct session *s, const char *path, size_t len, struct ticket **t);

/* The stdin file: writers are counted so EOF waits for the last one to close. */
int session_stdin_open(struct session *s);
void session_stdin_close(struct session *s);
/* Accepts up to len bytes (returns how many), or -EAGAIN with w queued until there is room. */
ssize_t session_stdin_write(struct session *s, const char *buf, size_t len, struct waiter *w);

/* The ctl file: "kill [SIGNAL]", "killall [SIGNAL]", "timeout MS", "restart". -EINVAL for
 * anything else, -ESRCH for a kill with nothing running. s NULL: whether it would take the
 * line (0 or -EINVAL), touching nothing. */
int session_ctl(struct session *s, const char *line, size_t len);
/* Whether something of the session runs besides its idle shell: a command (or a checkout, a cd
 * the shell works on), or what commands left behind (not its background processes). */
bool session_busy(struct session *s);
/* The session's default timeout in ms (0 = none); -EINVAL on a bad value. */
uint64_t session_timeout(struct session *s);
int session_set_timeout(struct session *s, const char *text, size_t len);
/* Marks it as brought back by a daemon's start: its status says so from now on. */
void session_mark_restored(struct session *s);
/* The status file: "key value" lines; caller frees. */
char *session_status(struct session *s, size_t *len);
/* A checkout request line ("URL [branch=B] [dir=D] [depth=N]"), queued like a command; its
 * checkout number goes to *n if n is given.
 * -EINVAL for a bad line or a target outside the workspace. */
int session_checkout(struct session *s, const char *line, size_t len, unsigned *n);
/* What session_checkout would answer for the line, without queuing anything. */
int session_checkout_check(struct session *s, const char *line, size_t len);
/* The latest checkout (referenced; its stdout is the progress), or NULL. */
struct run *session_checkout_run(struct session *s);
/* Run number n of the history (referenced), or NULL if it is not kept. */
struct run *session_run(struct session *s, unsigned n);
/* Numbers of the runs kept, oldest first; caller frees. */
size_t session_runs(struct session *s, unsigned **ns);

#endif
