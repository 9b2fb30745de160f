/* The shell driver: one persistent bash per session running a small driver loop that reads
 * requests (a sequence tag and a script) from fd 3, evals each in the shell itself, and reports
 * the tag, status, cwd and exported environment on fd 4. Output on fds 1 and 2 is routed to
 * whatever sink the owner names, so framing lives out of band and output cannot fool it. */
#ifndef SBX_SHELL_H
#define SBX_SHELL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config.h"
#include "envlist.h"
#include "spool.h"

struct shell;

struct shell_report {
	const char *seq;
	int status;
	const char *cwd; /* "" if the shell had no PWD */
	struct envlist env;
};

/* Called on the loop thread with the core lock held. */
struct shell_cbs {
	void (*on_report)(void *arg, struct shell_report *rep);
	/* The command just sent started: the shell can now be told to abandon it. */
	void (*on_started)(void *arg);
	/* The launcher reported the shell's pid, which may come after the first command was
	 * sent: the two arrive on different descriptors. Optional. */
	void (*on_pid)(void *arg, pid_t pid);
	/* The shell exited (wait status; start_err is the errno if the launcher could not start
	 * it, else 0); the shell object is freed after this returns. */
	void (*on_exit)(void *arg, int wstatus, int start_err);
	/* Where output goes now: a spool, or NULL to drop it. */
	struct spool *(*sink)(void *arg, int fd_no);
};

struct cgroup;

/* Core lock held. The first report (seq "i") comes once the driver is up. cg may be NULL.
 * NULL and *err (-errno) if its pipes or cgroup files cannot be opened. */
struct shell *shell_start(const struct config *cfg, const struct envlist *env, const char *cwd,
			  struct cgroup *cg, const struct shell_cbs *cbs, void *arg, int *err);
/* Core lock held: send one request; the shell must be idle (its last report came). stdin_path
 * NULL means the command reads /dev/null. */
void shell_send(struct shell *sh, const char *seq, const char *script, size_t len,
		const char *stdin_path);
/* Core lock held: keeps what the command wrote to stderr so far and drops the rest until the
 * next request, for a command about to be killed: what then comes is the shell's notice of the
 * kill (`line 1: 49 Killed sleep 10`), which is ours, not the command's. */
void shell_mute_stderr(struct shell *sh);
/* Core lock held: kill the shell's process group; on_exit follows. */
void shell_kill(struct shell *sh);
/* Core lock held: signal the shell (and its process group if group). */
void shell_signal(struct shell *sh, int sig, bool group);
/* Core lock held: forget the shell without callbacks (kills it first). */
void shell_abandon(struct shell *sh);
pid_t shell_pid(const struct shell *sh);

/* Parses one whole report (tag, status, cwd, NAME=VALUE entries, an empty field; each ends with
 * a NUL) at the start of buf into rep, whose strings point into buf and whose env the caller
 * frees. Returns its length, 0 if buf holds no whole report yet (rep then holds nothing). */
size_t shell_report_parse(const char *buf, size_t len, struct shell_report *rep);

/* Returns s as one single-quoted shell word, for generated scripts; caller frees. */
char *shell_quote(const char *s);

#endif
