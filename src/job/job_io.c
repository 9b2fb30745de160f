/* The stdio of a background process's start (see job_priv.h): its pipes, or the pty the
 * launcher makes, its output into its run's spools, and its stdin fed from the stdin file. */
#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cgroup.h"
#include "fdres.h"
#include "identity.h"
#include "job.h"
#include "job_priv.h"
#include "log.h"
#include "xmalloc.h"

/* A process on a pty writes a log, not a screen: programs should not draw. */
#define TTY_TERM_ENV "TERM=dumb"
#define TTY_ROWS     24
#define TTY_COLS     80
/* Reads of a pty master at exit, 64 KiB each: what its tree left (killed by then, unless there
 * is no cgroup: then bounded, so a survivor cannot hold the loop). */
#define TTY_READS_AT_EXIT 64

static void close_pipe(struct job *j, int i)
{
	if (j->out_lf[i])
		loop_del_fd(j->out_lf[i]);
	if (j->out[i] >= 0)
		close(j->out[i]);
	j->out_lf[i] = NULL;
	j->out[i] = -1;
}

/* While it runs: what the pipe or master has now. */
static void drain(struct job *j, int i)
{
	ssize_t n;

	if (j->out[i] < 0)
		return;
	n = spool_fill(&j->run->out[i], j->out[i], 4u << 20);
	/* EOF: every writer closed it (`exec >/dev/null`); EIO from a pty master: no slave is
	 * open any more. Stop watching it. */
	if (n == 0 || (n < 0 && n != -EAGAIN && n != -EINTR))
		close_pipe(j, i);
}

/* At exit, its tree gone: everything it wrote. */
static void drain_at_exit(struct job *j, int i)
{
	int avail = 0;

	if (j->out[i] < 0)
		return;
	if (j->tty) {
		/* A master has no count of what is in flight; it reads to EIO once the slaves are
		 * closed, after everything they wrote. */
		for (int k = 0; k < TTY_READS_AT_EXIT; k++) {
			ssize_t n = spool_fill(&j->run->out[i], j->out[i], 65536);

			if (n <= 0 && n != -EINTR)
				break;
		}
		return;
	}
	/* What the process wrote is in the pipe; take exactly that. */
	while (ioctl(j->out[i], FIONREAD, &avail) == 0 && avail > 0)
		if (spool_fill(&j->run->out[i], j->out[i], (size_t)avail) <= 0)
			break;
}

static void close_pipes(struct job *j)
{
	close_pipe(j, 0);
	close_pipe(j, 1);
}

static void on_output(struct loop_fd *lf, uint32_t events, void *arg)
{
	struct job *j = arg;
	int i = lf == j->out_lf[0] ? 0 : 1;

	(void)events;
	drain(j, i);
}

/* Loop thread, core lock held: the pty of a tty start, before its exit. Its output goes to
 * stdout's spool, and stdin is fed into a second descriptor of the master. */
static void on_pty_job(struct proc *p, int master)
{
	struct job *j = container_of(p, struct job, proc);
	int in_w;

	if (j->out[0] >= 0) { /* a second STARTED for it: the launcher says nonsense */
		close(master);
		return;
	}
	j->out[0] = master;
	j->out_lf[0] = loop_add_fd(master, EPOLLIN, on_output, j);
	in_w = fcntl(master, F_DUPFD_CLOEXEC, 0);
	if (in_w < 0)
		log_warn("job %s: no stdin for its pty", j->c.name);
	else
		feed_attach_tty(&j->in, in_w);
}

int job_io_open(struct job *j, int fds[3], int cgfds[4], int *ncg, int *in_w)
{
	int p[2], rc;

	*in_w = -1;
	*ncg = 0;
	if (j->tty) {
		rc = *ncg = cgroup_join_fds(j->c.cg, cgfds, 4);
		if (rc < 0)
			*ncg = 0;
		return rc < 0 ? rc : 0;
	}
	if (feed_wanted(&j->in)) {
		if ((rc = identity_pipe(p, session_owner)) < 0)
			goto fail;
		fds[0] = p[0];
		*in_w = p[1];
	} else if ((fds[0] = rc = fdres_open("/dev/null", O_RDONLY, 0)) < 0) {
		goto fail;
	}
	for (int i = 0; i < 2; i++) {
		if ((rc = fdres_pipe(p)) < 0)
			goto fail;
		fcntl(p[0], F_SETFL, O_NONBLOCK);
		fcntl(p[0], F_SETPIPE_SZ, 1 << 20);
		j->out[i] = p[0];
		fds[i + 1] = p[1];
	}
	if ((rc = *ncg = cgroup_join_fds(j->c.cg, cgfds, 4)) >= 0)
		return 0;
fail:
	*ncg = 0;
	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (*in_w >= 0)
		close(*in_w);
	close_pipes(j);
	return rc;
}

void job_io_launch(struct job *j, char *argv[], struct envlist *env, int fds[3], int cgfds[4],
		   int ncg, int in_w)
{
	if (j->tty) {
		j->proc.on_pty = on_pty_job;
		envlist_put(env, TTY_TERM_ENV);
		launch_start_pty(&j->proc, session_cwd_locked(j->c.s), argv, env->v, cgfds, ncg,
				 TTY_ROWS, TTY_COLS);
		return;
	}
	j->proc.on_pty = NULL;
	launch_start(&j->proc, session_cwd_locked(j->c.s), argv, env->v, fds, 3, cgfds, ncg);
	for (int i = 0; i < 2; i++)
		j->out_lf[i] = loop_add_fd(j->out[i], EPOLLIN, on_output, j);
	if (in_w >= 0)
		feed_attach(&j->in, in_w);
}

void job_io_finish(struct job *j)
{
	drain_at_exit(j, 0);
	drain_at_exit(j, 1);
	close_pipes(j);
	feed_detach(&j->in);
}

int job_stdin_open(struct job *j)
{
	core_lock();
	feed_writer_open(&j->in);
	core_unlock();
	return 0;
}

void job_stdin_close(struct job *j)
{
	core_lock();
	feed_writer_close(&j->in);
	core_unlock();
}

ssize_t job_stdin_write(struct job *j, const char *buf, size_t len, struct waiter *w)
{
	ssize_t n;

	core_lock();
	n = j->c.removed ? -ENOENT : feed_write(&j->in, buf, len, w);
	core_unlock();
	return n;
}
