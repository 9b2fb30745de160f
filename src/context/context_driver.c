/* A context's driver process (see context_priv.h): finding the driver of a language, starting it
 * through the launcher in the context's cgroup, never dumpable (context_loader.h), with fds 0-4
 * as the driver's protocol wants them, writing requests, reading its frames and its output,
 * killing it, and its exit. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cgroup.h"
#include "context_loader.h"
#include "context_priv.h"
#include "fdres.h"
#include "handover.h"
#include "identity.h"
#include "feed.h"
#include "log.h"
#include "xmalloc.h"

/* The driver is run through this descriptor, so it needs no path inside the sandbox: its #!
 * interpreter is executed on /proc/self/fd/5, which the interpreter opens. */
#define DRIVER_FD   5
#define DRIVER_EXEC "/proc/self/fd/5"
/* The interpreter's loader, what is executed (context_loader.h): it runs the interpreter. */
#define LOADER_FD   6
#define LOADER_EXEC "/proc/self/fd/6"
#define NFDS	    7
/* Frames handled per wakeup, so that a flooding driver cannot hold the loop. */
#define FRAMES_PER_WAKE 64

static char *driver_dir;

/* flag: for the interpreter, before the script. Node would resolve /proc/self/fd/5 to the
 * driver's host path, which the sandbox does not have. */
static const struct {
	const char *file, *flag, *arg;
} drivers[] = {
    [LANG_PYTHON] = {"sbxfs-pydriver", NULL, NULL},
    [LANG_JAVASCRIPT] = {"sbxfs-jsdriver", "--preserve-symlinks-main", "javascript"},
    [LANG_TYPESCRIPT] = {"sbxfs-jsdriver", "--preserve-symlinks-main", "typescript"},
};

/* A driver's "#!" line: the interpreter's host path ("/usr/bin/env NAME" looked up in the
 * directories a sandbox's PATH has) and its one argument, as the kernel splits it. */
struct shebang {
	char interp[256];
	char arg[256];
};

void context_driver_set_dir(const char *self_exe)
{
	char *copy = xstrdup(self_exe);

	free(driver_dir);
	driver_dir = self_exe && *self_exe ? xstrdup(dirname(copy)) : NULL;
	free(copy);
}

static char *trim(char *s)
{
	char *end;

	s += strspn(s, " \t");
	end = s + strlen(s);
	while (end > s && strchr(" \t\n", end[-1]))
		*--end = '\0';
	return s;
}

/* "/usr/bin/env NAME [ARG]": NAME's path, and ARG. */
static int env_program(struct shebang *sb)
{
	static const char *const dirs[] = {"/usr/local/bin", "/usr/bin", "/bin"};
	char name[200], *rest = sb->arg + strcspn(sb->arg, " \t");

	snprintf(name, sizeof(name), "%.*s", (int)(rest - sb->arg), sb->arg);
	memmove(sb->arg, trim(rest), strlen(trim(rest)) + 1);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && name[0]; i++) {
		snprintf(sb->interp, sizeof(sb->interp), "%s/%s", dirs[i], name);
		if (access(sb->interp, X_OK) == 0)
			return 0;
	}
	return -ENOENT;
}

/* -ENOENT unless the file starts with "#!" and its interpreter is there. */
static int read_shebang(const char *path, struct shebang *sb)
{
	char line[512] = "", *p, *sp;
	FILE *f = fopen(path, "re");

	if (!f)
		return -ENOENT;
	p = fgets(line, sizeof(line), f);
	fclose(f);
	if (!p || strncmp(line, "#!", 2))
		return -ENOENT;
	p = trim(line + 2);
	sp = p + strcspn(p, " \t");
	snprintf(sb->arg, sizeof(sb->arg), "%s", trim(sp));
	*sp = '\0';
	snprintf(sb->interp, sizeof(sb->interp), "%s", p);
	if (!strcmp(sb->interp, "/usr/bin/env"))
		return env_program(sb);
	return sb->interp[0] == '/' && access(sb->interp, X_OK) == 0 ? 0 : -ENOENT;
}

int context_driver_resolve(enum ctx_lang lang, char **path)
{
	const char *dirs[] = {driver_dir, SBXFS_LIBEXECDIR};

	for (size_t i = 0; i < 2; i++) {
		if (!dirs[i])
			continue;
		*path = xasprintf("%s/%s", dirs[i], drivers[lang].file);
		struct shebang sb;

		if (access(*path, R_OK | X_OK) == 0)
			return read_shebang(*path, &sb);
		free(*path);
	}
	*path = NULL;
	return -ENOENT;
}

static void close_fd(int *fd, struct loop_fd **lf)
{
	if (lf && *lf)
		loop_del_fd(*lf);
	if (*fd >= 0)
		close(*fd);
	if (lf)
		*lf = NULL;
	*fd = -1;
}

static void close_all(struct context_driver *d)
{
	close_fd(&d->req_w, &d->req_lf);
	close_fd(&d->ev_r, &d->ev_lf);
	close_fd(&d->out_r[0], &d->out_lf[0]);
	close_fd(&d->out_r[1], &d->out_lf[1]);
	ctx_reader_free(&d->rd);
	free(d->wbuf.p);
	d->wbuf = (struct jbuf){0};
	d->woff = 0;
}

/* Output outside any cell: kept (bounded) to explain a driver that did not come up. */
static void note(struct context_driver *d, const char *buf, size_t len)
{
	size_t room = DRV_NOTE_MAX - 1 - d->notelen;

	memcpy(d->note + d->notelen, buf, len < room ? len : room);
	d->notelen += len < room ? len : room;
	d->note[d->notelen] = '\0';
}

void context_driver_note(struct context *c, const char *name, const char *value)
{
	note(&c->drv, name, strlen(name));
	note(&c->drv, ": ", 2);
	note(&c->drv, value, strlen(value));
	note(&c->drv, "\n", 1);
}

static void drain_one(struct context *c, int i, bool all)
{
	struct context_driver *d = &c->drv;
	char buf[4096];
	int avail = 0;
	ssize_t n = -1;

	if (d->out_r[i] < 0)
		return;
	if (c->current) {
		if (!all) {
			n = spool_fill(&c->current->run->out[i], d->out_r[i], 4u << 20);
			if (n == 0)
				close_fd(&d->out_r[i], &d->out_lf[i]);
			return;
		}
		/* What was written before the event we act on is in the pipe: take exactly that,
		 * not what a thread of the cell keeps writing meanwhile. */
		if (ioctl(d->out_r[i], FIONREAD, &avail) < 0)
			return;
		for (ssize_t left = avail; left > 0; left -= n)
			if ((n = spool_fill(&c->current->run->out[i], d->out_r[i], (size_t)left)) <=
			    0)
				break;
		return;
	}
	/* Bounded, so that a driver writing without end between cells cannot hold the loop. */
	for (int k = 0; k < 16 && (n = read(d->out_r[i], buf, sizeof(buf))) > 0; k++)
		note(d, buf, (size_t)n);
	if (n == 0)
		close_fd(&d->out_r[i], &d->out_lf[i]);
}

void context_driver_drain(struct context *c)
{
	drain_one(c, 0, true);
	drain_one(c, 1, true);
}

static void on_output(struct loop_fd *lf, uint32_t events, void *arg)
{
	struct context *c = arg;

	(void)events;
	drain_one(c, lf == c->drv.out_lf[0] ? 0 : 1, false);
}

void context_driver_violation(struct context *c, const char *why)
{
	struct context_driver *d = &c->drv;

	log_warnx("context %s: driver killed: %s", c->name, why);
	if (!d->kill_why)
		d->kill_why = xstrdup(why);
	context_driver_kill(c, DK_PROTOCOL);
}

static void on_events(struct loop_fd *lf, uint32_t events, void *arg)
{
	struct context *c = arg;
	struct ctx_event ev;
	int rc = 0;

	(void)lf;
	(void)events;
	for (int k = 0; k < FRAMES_PER_WAKE && c->drv.ev_r >= 0; k++) {
		rc = ctx_reader_step(&c->drv.rd, c->drv.ev_r, &ev);
		if (rc <= 0)
			break;
		context_event(c, &ev);
		ctx_event_free(&ev);
	}
	if (rc == -EMSGSIZE)
		context_driver_violation(c, "a frame over the size limit");
	else if (rc == -EPROTO)
		context_driver_violation(c, "a malformed frame");
	else if (rc < 0) /* EOF: its exit will tell the rest */
		close_fd(&c->drv.ev_r, &c->drv.ev_lf);
}

static void flush_requests(struct context *c)
{
	struct context_driver *d = &c->drv;

	while (d->woff < d->wbuf.len) {
		ssize_t n = write(d->req_w, d->wbuf.p + d->woff, d->wbuf.len - d->woff);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			loop_mod_fd(d->req_lf, EPOLLOUT);
			return;
		}
		if (n < 0) { /* it closed its end: its exit will tell */
			d->woff = d->wbuf.len;
			break;
		}
		d->woff += (size_t)n;
	}
	free(d->wbuf.p);
	d->wbuf = (struct jbuf){0};
	d->woff = 0;
	loop_mod_fd(d->req_lf, 0);
}

static void on_writable(struct loop_fd *lf, uint32_t events, void *arg)
{
	(void)lf;
	(void)events;
	flush_requests(arg);
}

void context_driver_send_run(struct context *c, const char *code, size_t len)
{
	struct context_driver *d = &c->drv;
	struct jbuf body = {0};
	unsigned char head[4];

	handover_run(); /* the host's files, written before this cell, are the sandbox's */
	jbuf_add(&body, "{\"op\":\"run\",\"code\":", 19);
	json_string(&body, code, len);
	jbuf_add(&body, "}", 1);
	head[0] = (unsigned char)(body.len >> 24);
	head[1] = (unsigned char)(body.len >> 16);
	head[2] = (unsigned char)(body.len >> 8);
	head[3] = (unsigned char)body.len;
	jbuf_add(&d->wbuf, head, 4);
	jbuf_add(&d->wbuf, body.p, body.len);
	free(body.p);
	if (d->req_w >= 0)
		flush_requests(c);
}

static void on_exit_drv(struct proc *p, int wstatus)
{
	struct context *c = container_of(p, struct context, drv.proc);

	if (p->start_err) {
		char msg[128];

		snprintf(msg, sizeof(msg), "the launcher could not start it: %s",
			 strerror(p->start_err));
		note(&c->drv, msg, strlen(msg));
	}
	/* Its tree goes with it: a cell's children do not outlive their interpreter. */
	cgroup_kill_tree(c->cg);
	if (!c->cg)
		launch_signal(&c->drv.proc, SIGKILL, true);
	/* Events it sent before it died still count (a done just before exit()). */
	c->drv.exiting = true;
	if (c->drv.ev_r >= 0 && c->drv.kill != DK_PROTOCOL)
		on_events(NULL, 0, c);
	context_driver_drain(c);
	close_all(&c->drv);
	c->drv.exiting = false;
	c->drv.running = false;
	context_driver_gone(c, wstatus); /* sets st to DRV_NONE once it looked at it */
	c->drv.kill = DK_NONE;
	free(c->drv.kill_why);
	c->drv.kill_why = NULL;
	context_unref(c); /* the running driver's reference */
}

/* The descriptors of a start: fds[] for the driver (0-6), ours in d. -errno, nothing open.
 * The pipes are the sandbox user's: the driver may reopen its own through /proc/self. */
static int open_fds(struct context_driver *d, const char *path, const char *interp, int fds[NFDS])
{
	int p[2], rc;

	for (int i = 0; i < NFDS; i++)
		fds[i] = -1;
	if ((fds[0] = rc = fdres_open("/dev/null", O_RDONLY, 0)) < 0)
		goto fail;
	for (int i = 0; i < 2; i++) {
		if ((rc = identity_pipe(p, ctx_owner)) < 0)
			goto fail;
		fcntl(p[0], F_SETFL, O_NONBLOCK);
		fcntl(p[0], F_SETPIPE_SZ, 1 << 20);
		d->out_r[i] = p[0];
		fds[i + 1] = p[1];
	}
	if ((rc = identity_pipe(p, ctx_owner)) < 0)
		goto fail;
	fds[3] = p[0];
	d->req_w = p[1];
	fcntl(d->req_w, F_SETFL, O_NONBLOCK);
	if ((rc = identity_pipe(p, ctx_owner)) < 0)
		goto fail;
	d->ev_r = p[0];
	fds[4] = p[1];
	fcntl(d->ev_r, F_SETFL, O_NONBLOCK);
	fcntl(d->ev_r, F_SETPIPE_SZ, 1 << 20);
	if ((fds[DRIVER_FD] = rc = fdres_open(path, O_RDONLY, 0)) < 0)
		goto fail;
	if ((fds[LOADER_FD] = rc = context_loader_open(interp)) < 0)
		goto fail;
	return 0;
fail:
	for (int i = 0; i < NFDS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	close_all(d);
	return rc;
}

/* loader interpreter [its #! argument] [the language's flag] /proc/self/fd/5 [the language] */
static void make_argv(enum ctx_lang lang, struct shebang *sb, char *argv[7])
{
	int n = 0;

	argv[n++] = LOADER_EXEC;
	argv[n++] = sb->interp;
	if (sb->arg[0])
		argv[n++] = sb->arg;
	if (drivers[lang].flag)
		argv[n++] = (char *)drivers[lang].flag;
	argv[n++] = DRIVER_EXEC;
	if (drivers[lang].arg)
		argv[n++] = (char *)drivers[lang].arg;
	argv[n] = NULL;
}

int context_driver_start(struct context *c, struct envlist *env)
{
	struct context_driver *d = &c->drv;
	int fds[NFDS], cgfds[4], ncg, rc;
	struct shebang sb;
	char *path, *argv[7];

	if ((rc = context_driver_resolve(c->lang, &path)) < 0)
		return rc;
	if ((rc = read_shebang(path, &sb)) < 0) {
		free(path);
		return rc;
	}
	make_argv(c->lang, &sb, argv);
	d->req_w = d->ev_r = d->out_r[0] = d->out_r[1] = -1;
	rc = open_fds(d, path, sb.interp, fds);
	free(path);
	if (rc < 0)
		return rc;
	if ((ncg = cgroup_join_fds(c->cg, cgfds, 4)) < 0) {
		for (int i = 0; i < NFDS; i++)
			close(fds[i]);
		close_all(d);
		return ncg;
	}
	d->notelen = 0;
	d->note[0] = '\0';
	d->kill = DK_NONE;
	d->proc = (struct proc){.on_exit = on_exit_drv};
	launch_start(&d->proc, c->cwd, argv, env->v, fds, NFDS, cgfds, ncg);
	d->out_lf[0] = loop_add_fd(d->out_r[0], EPOLLIN, on_output, c);
	d->out_lf[1] = loop_add_fd(d->out_r[1], EPOLLIN, on_output, c);
	d->ev_lf = loop_add_fd(d->ev_r, EPOLLIN, on_events, c);
	d->req_lf = loop_add_fd(d->req_w, 0, on_writable, c);
	d->running = true;
	d->st = DRV_STARTING;
	c->starts++;
	context_ref(c); /* held until its exit */
	return 0;
}

void context_driver_signal(struct context *c, int sig)
{
	if (c->drv.running)
		launch_signal(&c->drv.proc, sig, false);
}

void context_driver_abandon(struct context *c)
{
	if (!c->drv.running)
		return;
	context_driver_kill(c, DK_KILLED);
	launch_detach(&c->drv.proc);
	close_all(&c->drv);
	c->drv.running = false;
	c->drv.st = DRV_NONE;
	free(c->drv.kill_why);
	c->drv.kill_why = NULL;
	context_unref(c); /* the running driver's reference */
}

void context_driver_kill(struct context *c, enum drv_kill why)
{
	struct context_driver *d = &c->drv;

	if (!d->running)
		return;
	if (d->kill == DK_NONE)
		d->kill = why;
	/* Nothing more it sends counts. */
	close_fd(&d->ev_r, &d->ev_lf);
	launch_signal_tree(&d->proc, c->cg, SIGKILL);
}
