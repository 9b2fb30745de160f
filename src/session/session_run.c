/* A session's work as submitted (see session.h): commands and checkouts become runs queued for
 * exec.c, and the history of runs the runs/ directory shows. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "checkout_run.h"
#include "log.h"
#include "session_priv.h"
#include "xmalloc.h"

/* Core lock held: the new run joins the history; the oldest beyond the limit leave it. */
static void remember(struct session *s, struct run *r)
{
	run_ref(r);
	TAILQ_INSERT_TAIL(&s->runs, r, hist);
	if (++s->nruns > session_cfg->history) {
		struct run *old = TAILQ_FIRST(&s->runs);

		TAILQ_REMOVE(&s->runs, old, hist);
		s->nruns--;
		run_unref(old);
	}
}

int session_submit(struct session *s, const char *cmd, size_t len, unsigned *n)
{
	struct op *op;
	struct run *r;
	char *base;
	int err = 0;

	if (memchr(cmd, '\0', len))
		return -EINVAL;
	if (len > SESSION_CMD_MAX)
		return -EFBIG;
	core_lock();
	if (s->removed) {
		core_unlock();
		return -ENOENT;
	}
	base = xasprintf("%s/%llu-%u", session_spool_dir, (unsigned long long)s->serial,
			 s->next_n + 1);
	r = run_new(s->next_n + 1, cmd, len, base, session_cfg->output_cap, &err);
	free(base);
	if (!r) {
		/* Refused: the close of cmd fails with err, and the run is kept as done with the
		 * reason, so exit, status and runs/ say what became of it. */
		log_warnx("session %s: command refused: cannot create its output spool: %s", s->id,
			  strerror(-err));
		r = run_refused(++s->next_n, cmd, len, -err, "cannot create its output spool");
		run_journal_as(r, "cmd", s->id, "cwd", s->cwd);
		remember(s, r);
		run_unref(r);
		core_unlock();
		return err;
	}
	s->next_n++;
	run_journal_as(r, "cmd", s->id, "cwd", s->cwd);
	if (n)
		*n = s->next_n;
	log_debug("session %s: command %u queued", s->id, s->next_n);
	remember(s, r);
	op = xcalloc(1, sizeof(*op));
	op->kind = OP_RUN;
	op->run = r;
	exec_enqueue(s, op);
	core_unlock();
	return 0;
}

struct run *session_latest(struct session *s)
{
	struct run *r;

	core_lock();
	r = TAILQ_LAST(&s->runs, run_list);
	if (r)
		run_ref(r);
	core_unlock();
	return r;
}

/* Parses a request and resolves its directory against the cwd; core lock held. */
static int checkout_prepare(struct session *s, const char *line, size_t len,
			    struct checkout_req *req, char **rel)
{
	char *name, *dir, *src;

	if (s->removed)
		return -ENOENT;
	if (checkout_parse(line, len, req) < 0)
		return -EINVAL;
	if ((src = checkout_source_in(s->cwd, req->url))) {
		free(req->url);
		req->url = src;
	}
	name = req->dir ? NULL : checkout_repo_name(req->url);
	if (!req->dir && !name) {
		checkout_req_free(req);
		return -EINVAL;
	}
	dir = req->dir ? xstrdup(req->dir) : xstrdup(name);
	*rel = checkout_resolve(checkout_run_workspace(), s->cwd, dir);
	free(dir);
	free(name);
	if (!*rel) {
		checkout_req_free(req);
		return -EINVAL; /* outside the workspace */
	}
	return 0;
}

int session_checkout_check(struct session *s, const char *line, size_t len)
{
	struct checkout_req req;
	char *rel;
	int rc;

	core_lock();
	rc = checkout_prepare(s, line, len, &req, &rel);
	core_unlock();
	if (rc == 0) {
		checkout_req_free(&req);
		free(rel);
	}
	return rc;
}

int session_checkout(struct session *s, const char *line, size_t len, unsigned *n)
{
	struct checkout_req req;
	char *dir, *rel;
	struct op *op;
	struct run *r;
	int err = 0;

	core_lock();
	err = checkout_prepare(s, line, len, &req, &rel);
	if (err < 0) {
		core_unlock();
		return err;
	}
	dir = xasprintf("%s/%llu-checkout-%u", session_spool_dir, (unsigned long long)s->serial,
			++s->next_checkout);
	r = run_new(s->next_checkout, line, len, dir, session_cfg->output_cap, &err);
	free(dir);
	if (!r) {
		core_unlock();
		checkout_req_free(&req);
		free(rel);
		return err;
	}
	run_journal_as(r, "checkout", s->id, "cwd", s->cwd);
	op = xcalloc(1, sizeof(*op));
	op->kind = OP_CHECKOUT;
	op->run = r;
	op->req = req;
	op->rel = rel;
	op->shown = rel[0] ? xasprintf("%s/%s", checkout_run_workspace(), rel)
			   : xstrdup(checkout_run_workspace());
	if (n)
		*n = s->next_checkout;
	if (s->checkout)
		run_unref(s->checkout);
	s->checkout = r;
	run_ref(r);
	if (op->req.depth) {
		/* libgit2 1.5 cannot fetch a shallow history: say so rather than pretend. */
		const char *msg = "error unsupported: depth=N (shallow clone) needs libgit2 1.7; "
				  "this build has 1.5 and clones full history only\n";

		run_begin(r);
		spool_append(&r->out[RUN_STDOUT], msg, strlen(msg));
		run_end(r, 1);
		exec_op_free(op);
	} else {
		exec_enqueue(s, op);
	}
	core_unlock();
	return 0;
}

struct run *session_checkout_run(struct session *s)
{
	struct run *r;

	core_lock();
	r = s->checkout;
	if (r)
		run_ref(r);
	core_unlock();
	return r;
}

struct run *session_run(struct session *s, unsigned n)
{
	struct run *r;

	core_lock();
	TAILQ_FOREACH(r, &s->runs, hist)
	if (r->n == n)
		break;
	if (r)
		run_ref(r);
	core_unlock();
	return r;
}

size_t session_runs(struct session *s, unsigned **ns)
{
	struct run *r;
	size_t n = 0;

	core_lock();
	*ns = xcalloc(s->nruns + 1, sizeof(unsigned));
	TAILQ_FOREACH(r, &s->runs, hist)
	(*ns)[n++] = r->n;
	core_unlock();
	return n;
}
