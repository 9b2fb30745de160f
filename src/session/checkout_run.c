/* Checkout processes (see checkout_run.h). */
#include "checkout_run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/queue.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checkout_limit.h"
#include "fdres.h"
#include "handover.h"
#include "identity.h"
#include "launch.h"
#include "log.h"
#include "loop.h"
#include "run.h"
#include "session.h"
#include "session_priv.h"
#include "xmalloc.h"

struct checkout_run {
	struct session *s; /* referenced */
	struct run *r;	   /* referenced */
	pid_t pid;
	struct checkout_limit lim;
	int out;
	struct loop_fd *lf;
	struct loop_timer timer;
	bool timed_out;
	char last[256]; /* the start of the last line it wrote */
	size_t last_len;
	bool at_line_start;
	void (*done)(struct session *s);
	LIST_ENTRY(checkout_run) link;
};

static LIST_HEAD(, checkout_run) running = LIST_HEAD_INITIALIZER(running);

static void on_exit_git(void *arg, int status);

static char *git_bin, *ws_host, *ws_inside;
static const struct identity *owner;

void checkout_run_init(const char *bin, const char *host, const char *inside,
		       const struct identity *id)
{
	git_bin = xstrdup(bin);
	ws_host = xstrdup(host);
	ws_inside = xstrdup(inside);
	owner = id;
}

void checkout_run_shutdown(void)
{
	struct checkout_run *g;
	int status;

	/* The loop is gone: reap what is left here. */
	while ((g = LIST_FIRST(&running))) {
		kill(g->pid, SIGKILL);
		waitpid(g->pid, &status, 0);
		on_exit_git(g, status);
	}
	free(git_bin);
	free(ws_host);
	free(ws_inside);
	git_bin = ws_host = ws_inside = NULL;
}

const char *checkout_run_workspace(void)
{
	return ws_inside;
}

/* Remembers the beginning of the current last line, to know how the output ended. */
static void track_lines(struct checkout_run *g, const char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (g->at_line_start) {
			g->last_len = 0;
			g->at_line_start = false;
		}
		if (buf[i] == '\n')
			g->at_line_start = true;
		else if (g->last_len < sizeof(g->last) - 1)
			g->last[g->last_len++] = buf[i];
	}
	g->last[g->last_len] = '\0';
}

static void drain(struct checkout_run *g)
{
	char buf[65536];
	ssize_t n;

	while (g->out >= 0 && (n = read(g->out, buf, sizeof(buf))) > 0) {
		track_lines(g, buf, (size_t)n);
		spool_append(&g->r->out[RUN_STDOUT], buf, (size_t)n);
	}
}

static void on_output(struct loop_fd *lf, uint32_t events, void *arg)
{
	(void)lf;
	(void)events;
	drain(arg);
}

static void final_line(struct checkout_run *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void final_line(struct checkout_run *g, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (!g->at_line_start && g->r->out[RUN_STDOUT].size > 0)
		spool_append(&g->r->out[RUN_STDOUT], "\n", 1);
	spool_append(&g->r->out[RUN_STDOUT], line, (size_t)(n < (int)sizeof(line) ? n : 0));
}

static void on_exit_git(void *arg, int status)
{
	struct checkout_run *g = arg;
	int code = run_status_from_wait(status);

	drain(g);
	loop_timer_cancel(&g->timer);
	if (g->lf)
		loop_del_fd(g->lf);
	if (g->out >= 0)
		close(g->out);
	g->out = -1;
	if (g->timed_out)
		final_line(g, "error timeout: no result within %llu ms\n",
			   (unsigned long long)session_cfg->git_timeout_ms);
	else if (strncmp(g->last, "ok ", 3) && strncmp(g->last, "error ", 6) &&
		 checkout_limit_oom(&g->lim, status))
		final_line(g, "error too-large: out of memory: sbxfs-git was killed at the "
			      "checkout's or the session's memory limit\n");
	else if (strncmp(g->last, "ok ", 3) && strncmp(g->last, "error ", 6))
		final_line(g, "error io: sbxfs-git ended with status %d\n", code);
	checkout_limit_release(&g->lim);
	run_end(g->r, strncmp(g->last, "ok ", 3) || g->timed_out ? 1 : 0);
	LIST_REMOVE(g, link);
	g->done(g->s);
	run_unref(g->r);
	session_unref(g->s);
	free(g);
}

static void on_timeout(struct loop_timer *t)
{
	struct checkout_run *g = container_of(t, struct checkout_run, timer);

	g->timed_out = true;
	kill(g->pid, SIGKILL);
}

/* Ends the checkout at once when its process cannot even start. */
static void fail_start(struct checkout_run *g, struct checkout_req *req, char *tok)
{
	final_line(g, "error io: cannot start sbxfs-git: %s\n", strerror(errno));
	snprintf(g->last, sizeof(g->last), "error");
	g->out = -1;
	free(tok);
	checkout_req_free(req);
	on_exit_git(g, 1 << 8);
}

/* In the child: only async-signal-safe calls until exec (the daemon has threads). */
static void __attribute__((noreturn))
exec_git(int out, const struct checkout_limit *lim, char **argv, char **envp)
{
	static const char unbound[] = "error io: cannot bound sbxfs-git (its cgroup, rlimits)\n";
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	/* Unbounded, it would read a hostile repository's objects into the host's memory. */
	if (checkout_limit_enter(lim) < 0) {
		ssize_t n = write(out, unbound, sizeof(unbound) - 1);

		_exit(n < 0 ? 127 : 125);
	}
	/* Its stdout is the progress; its stderr (libgit2's or a sanitizer's noise) stays the
	 * daemon's log. */
	if (dup2(out, 1) < 0)
		_exit(127);
	close_range(3, ~0U, 0);
	if (owner && identity_drop(owner) < 0)
		_exit(126);
	execve(argv[0], argv, envp);
	_exit(127);
}

/* sbxfs-git's arguments: the policy's options, then what to clone where. Free with
 * free_git_argv (the options, from index 1 up to "--", are allocated). */
static char **git_argv(struct checkout_req *req, const char *rel, const char *shown)
{
	char *const *roots = session_cfg->git_local_roots;
	size_t n = 0, nroots = 0;
	char **argv;

	while (roots[nroots])
		nroots++;
	argv = xcalloc(nroots + 11, sizeof(char *));
	argv[n++] = git_bin;
	for (size_t i = 0; i < nroots; i++)
		argv[n++] = xasprintf("--local-root=%s", roots[i]);
	argv[n++] = xasprintf("--object-max=%llu", (unsigned long long)session_cfg->git_object_max);
	if (session_cfg->git_allow_private)
		argv[n++] = xstrdup("--allow-private");
	argv[n++] = xasprintf("--inside=%s", ws_inside);
	argv[n++] = "--";
	argv[n++] = ws_host;
	argv[n++] = (char *)rel;
	argv[n++] = (char *)shown;
	argv[n++] = req->url;
	argv[n++] = req->branch;
	return argv;
}

static void free_git_argv(char **argv)
{
	for (size_t i = 1; strcmp(argv[i], "--"); i++)
		free(argv[i]);
	free(argv);
}

struct checkout_run *checkout_run_start(struct session *s, struct run *r, struct checkout_req *req,
					const char *rel, const char *shown, const char *token,
					void (*done)(struct session *s))
{
	char **argv = git_argv(req, rel, shown);
	char *tok = token ? xasprintf("GIT_TOKEN=%s", token) : NULL;
	char *envp[] = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", tok, NULL};
	struct checkout_run *g = xcalloc(1, sizeof(*g));
	int p[2], rc;

	g->s = s;
	g->r = r;
	g->done = done;
	LIST_INSERT_HEAD(&running, g, link);
	g->at_line_start = true;
	session_ref(s);
	run_ref(r);
	run_begin(r);
	handover_run(); /* a directory the host just made is the sandbox's to clone into */
	if ((rc = checkout_limit_prepare(&g->lim, s->cg, session_cfg->git_object_max,
					 session_cfg->git_file_max)) < 0 ||
	    (rc = fdres_pipe(p)) < 0) {
		errno = -rc;
		fail_start(g, req, tok);
		free_git_argv(argv);
		return NULL;
	}
	g->pid = fork();
	if (g->pid < 0) {
		close(p[0]);
		close(p[1]);
		fail_start(g, req, tok);
		free_git_argv(argv);
		return NULL;
	}
	if (g->pid == 0)
		exec_git(p[1], &g->lim, argv, envp);
	checkout_limit_forked(&g->lim);
	free_git_argv(argv);
	free(tok);
	close(p[1]);
	g->out = p[0];
	fcntl(g->out, F_SETFL, O_NONBLOCK);
	g->lf = loop_add_fd(g->out, EPOLLIN, on_output, g);
	g->timer.fn = on_timeout;
	loop_timer_arm(&g->timer, session_cfg->git_timeout_ms);
	launch_watch_child(g->pid, on_exit_git, g);
	checkout_req_free(req);
	return g;
}

void checkout_run_kill(struct checkout_run *g)
{
	if (g && g->pid > 0)
		kill(g->pid, SIGKILL);
}
