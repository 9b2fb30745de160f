/* The shell driver (see shell.h): starting bash through the launcher with its five fds, feeding
 * requests without blocking, parsing reports, and draining output into the owner's sink. */
#include "shell.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cgroup.h"
#include "fdres.h"
#include "handover.h"
#include "launch.h"
#include "log.h"
#include "loop.h"
#include "xmalloc.h"

/* A request's header: 'a' (the block is ASCII) or 'b' (it is not, and a NUL follows it), the tag
 * space-padded, the block's length right-aligned (spaces, not zeros: bash reads a leading 0 as
 * octal). */
#define REQ_TAG 11
#define REQ_LEN 12
#define REQ_LEN_AT 12
#define REQ_HDR 24
_Static_assert(REQ_LEN_AT == 1 + REQ_TAG && REQ_HDR == REQ_LEN_AT + REQ_LEN, "request header");
/* As the driver's text says them. */
#define STR(x) #x
#define XSTR(x) STR(x)
#define REQ_HDR_S XSTR(REQ_HDR)
#define REQ_TAG_S XSTR(REQ_TAG)
#define REQ_LEN_AT_S XSTR(REQ_LEN_AT)

/* The driver loop. A request on fd 3 is a header of REQ_HDR bytes, then a block of as many bytes
 * as the header says: the path the command's stdin comes from (empty: /dev/null), a newline, and
 * the script. `read -N` takes an ASCII block in one read(); a delimited read takes it a byte at
 * a time, as bash must not read past a delimiter on a pipe. But -N counts characters in the
 * session's locale, so a block with bytes past ASCII (the header's first byte says so) ends in
 * a NUL and is read up to it, byte by byte (a read under LC_ALL=C would have bash warn at each
 * command of a session whose LC_ALL names a locale it does not have). The script is
 * eval'd at top level, as `bash -c` runs its string: cd, export, declare, functions and
 * variables persist, and errors read `bash: line N: ...` (BASH_SOURCE is empty, $0 is bash),
 * which is why the whole driver is one line: the eval is on line 1, so line N of the script is
 * reported as line N. The driver's own stdout is the report pipe (fd 4 at start), so its
 * reports need no redirection; a command gets fds 1 and 2 from 5 and 6 and has 3, 5 and 6
 * closed, and its own `exec >x` lasts only for the command, as the eval's redirections are
 * undone after it. The report is printed in the loop condition, so `continue` in a command
 * still reports, and the outer loop re-enters after a `break`. A lone NUL on the report pipe
 * says a command started (its abort trap is armed); a report is tag, status, cwd, then a
 * newline and what `declare -px` prints (every exported variable, in one builtin: walking the
 * variables in shell code took most of an exec's time), then an empty field, NUL-separated.
 * The driver's own code runs with `set +u` (and its trap with defaults), a command with the
 * `set -u` it left. SIGUSR1 while a command runs makes the shell abandon the rest of it: a
 * DEBUG trap under extdebug returns 2 inside a function (a return, all the way up) and 1 at
 * top level (the command is skipped), and a command seen again at top level is a loop going
 * round, which `break` ends (that command runs once more), until the driver's own first
 * command. It also disowns the jobs the kill is ending, and `jobs` takes the news of
 * background jobs that died otherwise (once any was started: `$!` is set). bash reports a
 * foreground job killed by a signal (`line 1: 49 Killed ...`) on the command's stderr before
 * any trap can run, so a kill of ours mutes stderr first (shell_mute_stderr). */
static const char driver[] =
	"__sbx_status() { return \"$1\"; }; "
	"__sbx_abort() { builtin disown -a; builtin shopt -s extdebug; builtin trap "
	"'[[ $BASH_COMMAND == \"__sbx_rc=\\$?\" ]] && { builtin trap - DEBUG; "
	"builtin shopt -u extdebug; true; } || { [[ -n ${FUNCNAME-} ]] && __sbx_status 2 || "
	"{ __sbx_k=\"$LINENO $BASH_COMMAND\"; [[ -n ${__sbx_seen[$__sbx_k]-} ]] && builtin break; "
	"__sbx_seen[$__sbx_k]=1; __sbx_status 1; }; }' DEBUG; }; "
	"builtin declare -A __sbx_seen; "
	"builtin trap '' USR1; "
	"exec 5>&1 6>&2 1>&4 4>&-; "
	"__sbx_seq=i; "
	"while :; do "
	"while __sbx_rc=$?; "
	"__sbx_u=${-//[^u]/}; builtin set +u; "
	"builtin trap '' USR1; "
	"if [[ -n $! ]]; then builtin jobs >/dev/null 2>&1; fi; "
	"if [[ -n $__sbx_seq ]]; then "
	"builtin printf '%s\\0%s\\0%s\\0\\n' \"$__sbx_seq\" \"$__sbx_rc\" \"$PWD\"; "
	"builtin declare -px; builtin printf '\\0\\0'; "
	"__sbx_seq=; "
	"fi; "
	"builtin read -r -N " REQ_HDR_S " -u 3 __sbx_h || builtin exit 0; "
	"__sbx_seq=${__sbx_h:1:" REQ_TAG_S "}; __sbx_seq=${__sbx_seq%% *}; "
	"__sbx_n=${__sbx_h:" REQ_LEN_AT_S "}; "
	"if [[ $__sbx_h == a* ]]; then IFS= builtin read -r -N $((__sbx_n)) -u 3 __sbx_cmd; "
	"else IFS= builtin read -r -d '' -u 3 __sbx_cmd; fi || builtin exit 0; "
	"__sbx_in=${__sbx_cmd%%$'\\n'*}; __sbx_cmd=${__sbx_cmd#*$'\\n'}; "
	"do "
	"builtin trap __sbx_abort USR1; "
	"__sbx_seen=(); "
	"if [[ -n $__sbx_u ]]; then builtin set -u; fi; "
	"builtin printf '\\0'; "
	"builtin eval \"$__sbx_cmd\" <\"${__sbx_in:-/dev/null}\" >&5 2>&6 3<&- 5>&- 6>&-; "
	"done; "
	"done";

#define PIPE_SIZE (1 << 20)
/* A report is the environment and a little more; past this it is not a report. */
#define REPORT_MAX (16u << 20)
#define FILL_BUDGET (4u << 20)

struct shell {
	struct proc proc;
	const struct shell_cbs *cbs;
	void *arg;
	int out[2];              /* read ends of fds 1 and 2 */
	struct loop_fd *out_lf[2];
	int req_fd;              /* write end of fd 3 */
	struct loop_fd *req_lf;
	char *req_buf;           /* request bytes not yet written */
	size_t req_len, req_off;
	int rep_fd;              /* read end of fd 4 */
	struct loop_fd *rep_lf;
	char *rep_buf;
	size_t rep_len, rep_cap;
	bool muted;              /* stderr is dropped until the next command */
};

pid_t shell_pid(const struct shell *sh)
{
	return sh->proc.pid;
}

char *shell_quote(const char *s)
{
	size_t n = 2;
	char *q, *p;

	for (const char *c = s; *c; c++)
		n += *c == '\'' ? 4 : 1;
	q = p = xmalloc(n + 1);
	*p++ = '\'';
	for (const char *c = s; *c; c++) {
		if (*c == '\'') {
			memcpy(p, "'\\''", 4);
			p += 4;
		} else {
			*p++ = *c;
		}
	}
	*p++ = '\'';
	*p = '\0';
	return q;
}

/* Moves what a pipe holds now into the sink; bounded so a writer that never stops can't pin us.
 * Returns false at end of file. */
static bool drain(struct shell *sh, int i, size_t budget)
{
	struct spool *sink = i == 1 && sh->muted ? NULL : sh->cbs->sink(sh->arg, i + 1);
	char scratch[65536];

	while (budget > 0) {
		size_t chunk = budget < PIPE_SIZE ? budget : PIPE_SIZE;
		ssize_t n;

		if (sink)
			n = spool_fill(sink, sh->out[i], chunk);
		else
			n = read(sh->out[i], scratch, chunk < sizeof(scratch) ? chunk : sizeof(scratch));
		if (n == 0)
			return false;
		if (n < 0)
			return true;
		budget -= (size_t)n;
	}
	return true;
}

/* Everything the finished command wrote is in the pipes; take exactly that much. */
static void drain_pending(struct shell *sh)
{
	for (int i = 0; i < 2; i++) {
		int avail = 0;

		if (ioctl(sh->out[i], FIONREAD, &avail) == 0 && avail > 0)
			drain(sh, i, (size_t)avail);
	}
}

static void on_output(struct loop_fd *lf, uint32_t events, void *arg)
{
	struct shell *sh = arg;
	int i = lf == sh->out_lf[0] ? 0 : 1;

	(void)events;
	if (!drain(sh, i, FILL_BUDGET))
		loop_mod_fd(lf, 0); /* every writer is gone: stop watching */
}

static void close_fds(struct shell *sh)
{
	for (int i = 0; i < 2; i++) {
		if (sh->out_lf[i])
			loop_del_fd(sh->out_lf[i]);
		close(sh->out[i]);
	}
	loop_del_fd(sh->req_lf);
	close(sh->req_fd);
	loop_del_fd(sh->rep_lf);
	close(sh->rep_fd);
}

static void shell_free(struct shell *sh)
{
	close_fds(sh);
	free(sh->req_buf);
	free(sh->rep_buf);
	free(sh);
}

static void on_report_fd(struct loop_fd *lf, uint32_t events, void *arg)
{
	struct shell *sh = arg;
	struct shell_report rep;
	size_t used;
	ssize_t n;

	(void)lf;
	(void)events;
	if (sh->rep_len > REPORT_MAX) {
		/* Only a command writing into our fd 4 (reachable through /proc) gets here. */
		log_warnx("shell %d: report over %u bytes; killing it", (int)sh->proc.pid,
			  REPORT_MAX);
		loop_mod_fd(sh->rep_lf, 0);
		shell_kill(sh);
		return;
	}
	if (sh->rep_cap - sh->rep_len < 4096) {
		sh->rep_cap = sh->rep_cap * 2 + 65536;
		sh->rep_buf = xrealloc(sh->rep_buf, sh->rep_cap);
	}
	n = read(sh->rep_fd, sh->rep_buf + sh->rep_len, sh->rep_cap - sh->rep_len);
	if (n <= 0) {
		/* The shell is gone or closed fd 4; its exit is reported by the launcher. */
		if (n == 0)
			loop_mod_fd(sh->rep_lf, 0);
		return;
	}
	sh->rep_len += (size_t)n;
	for (;;) {
		if (sh->rep_len > 0 && sh->rep_buf[0] == '\0') {
			used = 1; /* a lone NUL: the command started */
			sh->cbs->on_started(sh->arg);
		} else if ((used = shell_report_parse(sh->rep_buf, sh->rep_len, &rep)) > 0) {
			drain_pending(sh);
			sh->cbs->on_report(sh->arg, &rep);
			envlist_free(&rep.env);
		} else {
			break;
		}
		memmove(sh->rep_buf, sh->rep_buf + used, sh->rep_len - used);
		sh->rep_len -= used;
	}
}

static void flush_request(struct shell *sh)
{
	while (sh->req_off < sh->req_len) {
		ssize_t n = write(sh->req_fd, sh->req_buf + sh->req_off, sh->req_len - sh->req_off);

		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				sh->req_off = sh->req_len; /* shell gone: its exit comes */
			break;
		}
		sh->req_off += (size_t)n;
	}
	loop_mod_fd(sh->req_lf, sh->req_off < sh->req_len ? EPOLLOUT : 0);
}

static void on_request_fd(struct loop_fd *lf, uint32_t events, void *arg)
{
	(void)lf;
	(void)events;
	flush_request(arg);
}

static bool is_ascii(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)p[i] >= 0x80)
			return false;
	return true;
}

void shell_send(struct shell *sh, const char *seq, const char *script, size_t len,
		const char *stdin_path)
{
	const char *in = stdin_path ? stdin_path : "";
	size_t ilen = strlen(in), block = ilen + 1 + len;
	bool ascii = is_ascii(script, len) && is_ascii(in, ilen);
	char *p;

	handover_run(); /* the host's files, written before this command, are the sandbox's */
	free(sh->req_buf);
	sh->req_len = REQ_HDR + block + !ascii;
	sh->req_buf = p = xmalloc(sh->req_len + 1);
	snprintf(p, REQ_HDR + 1, "%c%-*.*s%*zu", ascii ? 'a' : 'b', REQ_TAG, REQ_TAG, seq, REQ_LEN,
		 block);
	p += REQ_HDR;
	memcpy(p, in, ilen);
	p[ilen] = '\n';
	memcpy(p + ilen + 1, script, len);
	p[block] = '\0'; /* read up to by a 'b' block's reader; past the request for an 'a' one */
	sh->req_off = 0;
	sh->muted = false;
	flush_request(sh);
}

static void on_proc_started(struct proc *p)
{
	struct shell *sh = container_of(p, struct shell, proc);

	if (sh->cbs->on_pid)
		sh->cbs->on_pid(sh->arg, p->pid);
}

static void on_proc_exit(struct proc *p, int wstatus)
{
	struct shell *sh = container_of(p, struct shell, proc);

	drain_pending(sh);
	sh->cbs->on_exit(sh->arg, wstatus, p->start_err);
	shell_free(sh);
}

void shell_mute_stderr(struct shell *sh)
{
	drain_pending(sh);
	sh->muted = true;
}

void shell_kill(struct shell *sh)
{
	launch_signal(&sh->proc, SIGKILL, true);
}

void shell_signal(struct shell *sh, int sig, bool group)
{
	launch_signal(&sh->proc, sig, group);
}

void shell_abandon(struct shell *sh)
{
	shell_kill(sh);
	launch_detach(&sh->proc);
	shell_free(sh);
}

static int make_pipes(int child[5], int parent[5])
{
	int p[2], rc;

	for (int i = 0; i < 5; i++)
		child[i] = parent[i] = -1;
	child[0] = fdres_open("/dev/null", O_RDONLY, 0);
	if (child[0] < 0)
		return child[0];
	for (int i = 1; i < 5; i++) {
		if ((rc = fdres_pipe(p)) < 0)
			return rc;
		/* fd 3 is read by the shell; 1, 2 and 4 are written by it. */
		child[i] = i == 3 ? p[0] : p[1];
		parent[i] = i == 3 ? p[1] : p[0];
		fcntl(parent[i], F_SETFL, O_NONBLOCK);
		if (i == 1 || i == 2)
			fcntl(parent[i], F_SETPIPE_SZ, PIPE_SIZE);
	}
	return 0;
}

static void close_all(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static char **start_env(const struct envlist *env)
{
	struct envlist copy;

	/* bash counts SHLVL up from what it inherits; a restored shell should say 1 again. */
	envlist_copy(&copy, env);
	envlist_unset(&copy, "SHLVL");
	return copy.v;
}

struct shell *shell_start(const struct config *cfg, const struct envlist *env, const char *cwd,
			  struct cgroup *cg, const struct shell_cbs *cbs, void *arg, int *err)
{
	char *argv[] = {cfg->shell, "--noprofile", "--norc", "-c", (char *)driver, "bash", NULL};
	int child[5], parent[5], cgfds[4];
	int ncg;
	struct shell *sh;
	char **envp;
	int rc;

	rc = make_pipes(child, parent);
	ncg = rc < 0 ? 0 : cgroup_join_fds(cg, cgfds, 4);
	if (rc < 0 || ncg < 0) {
		close_all(child, 5);
		close_all(parent, 5);
		*err = rc < 0 ? rc : ncg;
		return NULL;
	}
	sh = xcalloc(1, sizeof(*sh));
	sh->cbs = cbs;
	sh->arg = arg;
	sh->proc.on_started = on_proc_started;
	sh->proc.on_exit = on_proc_exit;
	sh->out[0] = parent[1];
	sh->out[1] = parent[2];
	sh->req_fd = parent[3];
	sh->rep_fd = parent[4];
	for (int i = 0; i < 2; i++)
		sh->out_lf[i] = loop_add_fd(sh->out[i], EPOLLIN, on_output, sh);
	sh->req_lf = loop_add_fd(sh->req_fd, 0, on_request_fd, sh);
	sh->rep_lf = loop_add_fd(sh->rep_fd, EPOLLIN, on_report_fd, sh);
	envp = start_env(env);
	launch_start(&sh->proc, cwd, argv, envp, child, 5, cgfds, ncg);
	for (size_t i = 0; envp[i]; i++)
		free(envp[i]);
	free(envp);
	return sh;
}
