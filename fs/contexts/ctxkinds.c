/* The kinds of contexts/'s inodes, a row each (see ctxkind.h), and the functions the rows name:
 * what a file of each kind renders, how big it is now, what its read waits for, how its
 * writes are checked and applied. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cell.h"
#include "context.h"
#include "ctxfile_priv.h"
#include "ctxkind.h"
#include "envlist.h"
#include "refusals.h"
#include "reply.h"
#include "run.h"
#include "verb.h"
#include "xmalloc.h"

/* Bytes a one-value file (language, cwd, timeout) or ctl may be given in one open. */
#define SMALL_WRITE_MAX 4096

static int open_clone(struct xfh *fh)
{
	char name[CONTEXT_NAME_MAX + 2];
	int rc = context_clone(name);

	if (rc < 0)
		return rc;
	fh->snap = xasprintf("%s\n", name);
	fh->snaplen = strlen(fh->snap);
	return 0;
}

static int render_attr(struct context *c, struct cell *cell, fuse_ino_t ino, char **text,
		       size_t *len)
{
	(void)cell;
	*text = context_attr(c, ctx_row(ctx_ino_kind(ino))->attr, len);
	return 0;
}

static int render_status(struct context *c, struct cell *cell, fuse_ino_t ino, char **text,
			 size_t *len)
{
	(void)cell;
	(void)ino;
	*text = context_status(c, len);
	return 0;
}

static int render_cell_status(struct context *c, struct cell *cell, fuse_ino_t ino, char **text,
			      size_t *len)
{
	(void)c;
	(void)ino;
	*text = cell ? cell_status(cell, len) : NULL;
	return 0;
}

static int render_code(struct context *c, struct cell *cell, fuse_ino_t ino, char **text,
		       size_t *len)
{
	(void)c;
	(void)ino;
	*text = cell ? xmemdup(cell->run->cmd, *len = cell->run->cmdlen) : NULL;
	return 0;
}

/* results/K.FORMAT: the cell's K-th displayed value in that format. */
static int render_resfile(struct context *c, struct cell *cell, fuse_ino_t ino, char **text,
			  size_t *len)
{
	(void)c;
	*text = NULL;
	return cell ? cell_result_file(cell, ctx_ino_res(ino), ctx_ino_fmt(ino), text, len)
		    : -ENOENT;
}

static void size_code(struct cell *cell, fuse_ino_t ino, struct stat *st)
{
	(void)ino;
	if (cell)
		st->st_size = (off_t)cell->run->cmdlen;
}

static void size_stream(struct cell *cell, fuse_ino_t ino, struct stat *st)
{
	if (cell)
		run_stream_stat(cell->run, ctx_row(ctx_ino_kind(ino))->stream, &st->st_size,
				&st->st_mtim);
}

static int error_text(struct cell *cell, char **text, size_t *len)
{
	*text = cell_error_text(cell, len);
	return 0;
}

/* result and error: rendered once, by the first read after the cell ended, so every read sees
 * one document. */
static int try_awaited(fuse_req_t req, struct fhandle *h, size_t size, off_t off, struct waiter *w)
{
	struct xfh *fh = container_of(h, struct xfh, h);
	int rc = 0;

	if (cell_wait(fh->cell, w) < 0)
		return -EAGAIN;
	pthread_mutex_lock(&fh->h.lock);
	if (!fh->snap)
		rc = fh_row(fh)->await(fh->cell, &fh->snap, &fh->snaplen);
	pthread_mutex_unlock(&fh->h.lock);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		reply_slice(req, fh->snap, fh->snaplen, size, off);
	return 0;
}

static int try_stream(fuse_req_t req, struct fhandle *h, size_t size, off_t off, struct waiter *w)
{
	struct xfh *fh = container_of(h, struct xfh, h);
	size_t n;
	int fd;

	if (run_read_extent(fh->cell->run, fh_row(fh)->stream, off, size, &fd, &n, w) < 0)
		return -EAGAIN;
	/* Before the reply: the reader's next poll may be served at once, on another thread. */
	pthread_mutex_lock(&fh->h.lock);
	fh->pos = off + (off_t)n;
	pthread_mutex_unlock(&fh->h.lock);
	reply_extent(req, fd, n, off);
	return 0;
}

/* code: what was written so far holds no NUL; its size is checked by check_written. */
static int check_code(struct xfh *fh)
{
	return memchr(fh->wbuf, '\0', fh->wlen) ? -EINVAL : 0;
}

/* The length of wbuf's complete lines. */
static size_t complete_lines(struct xfh *fh)
{
	const char *nl = memrchr(fh->wbuf, '\n', fh->wlen);

	return nl ? (size_t)(nl - fh->wbuf) + 1 : 0;
}

/* ctl: each complete line is a verb. */
static int check_ctl(struct xfh *fh)
{
	size_t upto = complete_lines(fh);

	for (size_t i = 0; i < upto;) {
		const char *end = memchr(fh->wbuf + i, '\n', upto - i);
		size_t len = (size_t)(end - fh->wbuf) - i + 1;
		int rc = len > 1 ? context_ctl(NULL, fh->wbuf + i, len) : 0;

		if (rc < 0) {
			char *path = xasprintf("contexts/%s/ctl", context_name(fh->c));

			refusal_note(path, -rc, "%s", verb_why());
			free(path);
			return rc;
		}
		i += len;
	}
	return 0;
}

/* language, cwd, env, timeout: the whole check of the complete lines, without applying (EBUSY
 * included). */
static int check_attr(struct xfh *fh)
{
	static const char *const invalid[] = {
	    [CA_LANGUAGE] = "a language is python, javascript or typescript",
	    [CA_CWD] = "a cwd is an absolute path",
	    [CA_ENV] = ENVEDIT_FORM,
	    [CA_TIMEOUT] = "a timeout is a number of milliseconds, 0 to 4294967295",
	};
	size_t upto = complete_lines(fh);
	enum context_attr a = fh_row(fh)->attr;
	int rc = upto ? context_check_attr(fh->c, a, fh->wbuf, upto) : 0;
	char *path;

	if (rc == -EINVAL || rc == -EBUSY) {
		path = xasprintf("contexts/%s/%s", context_name(fh->c), fh_row(fh)->name);
		refusal_note(path, -rc, "%s",
			     rc == -EBUSY ? "it is set before the context's first cell"
					  : invalid[a]);
		free(path);
	}
	return rc;
}

static int apply_code(struct xfh *fh, const char *text, size_t len, unsigned *n)
{
	return context_submit(fh->c, text, len, n);
}

static int apply_attr(struct xfh *fh, const char *text, size_t len, unsigned *n)
{
	(void)n;
	return context_set_attr(fh->c, fh_row(fh)->attr, text, len);
}

/* Each ctl line in turn; the first failure stops (its errno is the close's). */
static int apply_ctl(struct xfh *fh, const char *text, size_t len, unsigned *n)
{
	(void)n;
	for (size_t i = 0; i < len;) {
		const char *end = memchr(text + i, '\n', len - i);
		size_t n = end ? (size_t)(end - text) - i + 1 : len - i;
		int rc = n > 1 || text[i] != '\n' ? context_ctl(fh->c, text + i, n) : 0;

		if (rc < 0)
			return rc;
		i += n;
	}
	return 0;
}

static bool poll_cell(struct fhandle *h, struct waiter *w)
{
	return cell_wait(container_of(h, struct xfh, h)->cell, w) == 0;
}

static bool poll_stream(struct fhandle *h, struct waiter *w)
{
	struct xfh *fh = container_of(h, struct xfh, h);

	return run_poll(fh->cell->run, fh_row(fh)->stream, fh->pos, w);
}

/* The rows. */

#define DIR_MODE    (S_IFDIR | 0755)
#define IN_ANY_CELL (IN_CTX | IN_CELL) /* the latest cell's, and cells/N/'s */

static const struct xkind clone_row = {
    .name = "clone",
    .path = "contexts/clone",
    .help = "read it: creates a context, returns its name",
    .mode = S_IFREG | 0444,
    .flags = XF_TOP,
    .open = open_clone,
};

/* The context's settings, set before its first cell. */

static const struct xkind language_row = {
    .name = "language",
    .help = "python, javascript or typescript, before the first cell",
    .mode = S_IFREG | 0644,
    .where = IN_CTX,
    .attr = CA_LANGUAGE,
    .render = render_attr,
    .wmax = SMALL_WRITE_MAX,
    .check = check_attr,
    .apply = apply_attr,
};

static const struct xkind cwd_row = {
    .name = "cwd",
    .help = "the directory its interpreter starts in",
    .mode = S_IFREG | 0644,
    .where = IN_CTX,
    .attr = CA_CWD,
    .render = render_attr,
    .wmax = SMALL_WRITE_MAX,
    .check = check_attr,
    .apply = apply_attr,
};

static const struct xkind env_row = {
    .name = "env",
    .help = "NAME=VALUE lines its interpreter starts with; write NAME=VALUE, -NAME",
    .mode = S_IFREG | 0644,
    .where = IN_CTX,
    .attr = CA_ENV,
    .render = render_attr,
    .wmax = CONTEXT_CODE_MAX,
    .check = check_attr,
    .apply = apply_attr,
};

static const struct xkind timeout_row = {
    .name = "timeout",
    .help = "each cell's time limit in ms (0: none)",
    .mode = S_IFREG | 0644,
    .where = IN_CTX,
    .attr = CA_TIMEOUT,
    .render = render_attr,
    .wmax = SMALL_WRITE_MAX,
    .check = check_attr,
    .apply = apply_attr,
};

static const struct xkind ctl_row = {
    .name = "ctl",
    .help = "write: interrupt | kill | restart | timeout MS",
    .mode = S_IFREG | 0200,
    .where = IN_CTX,
    .flags = XF_NO_READ,
    .wmax = SMALL_WRITE_MAX,
    .check = check_ctl,
    .apply = apply_ctl,
};

static const struct xkind status_row = {
    .name = "status",
    .help = "name, language, driver state, pid, cells, queued, ...",
    .mode = S_IFREG | 0444,
    .where = IN_CTX,
    .render = render_status,
};

/* A cell's files: the latest cell's in the context's directory, and cells/N/'s (history). */

static const struct xkind code_row = {
    .name = "code",
    .help = "write a cell: it runs at close; read: its code",
    .mode = S_IFREG | 0644,
    .where = IN_ANY_CELL,
    .flags = XF_CELL | XF_HANDLE,
    .render = render_code,
    .size = size_code,
    .wmax = CONTEXT_CODE_MAX,
    .check = check_code,
    .apply = apply_code,
};

static const struct xkind stdout_row = {
    .name = "stdout",
    .help = "what the cell wrote; blocks while it runs",
    .mode = S_IFREG | 0444,
    .where = IN_ANY_CELL,
    .flags = XF_CELL | XF_STREAM,
    .stream = RUN_STDOUT,
    .size = size_stream,
    .read = try_stream,
    .poll = poll_stream,
};

static const struct xkind stderr_row = {
    .name = "stderr",
    .help = "its error output, read the same way",
    .mode = S_IFREG | 0444,
    .where = IN_ANY_CELL,
    .flags = XF_CELL | XF_STREAM,
    .stream = RUN_STDERR,
    .size = size_stream,
    .read = try_stream,
    .poll = poll_stream,
};

static const struct xkind result_row = {
    .name = "result",
    .help = "blocks until it ends, then one JSON object of its results",
    .mode = S_IFREG | 0444,
    .where = IN_ANY_CELL,
    .flags = XF_CELL,
    .read = try_awaited,
    .poll = poll_cell,
    .await = cell_result_json,
};

static const struct xkind error_row = {
    .name = "error",
    .help = "blocks until it ends, then its error and traceback, or nothing",
    .mode = S_IFREG | 0444,
    .where = IN_ANY_CELL,
    .flags = XF_CELL,
    .read = try_awaited,
    .poll = poll_cell,
    .await = error_text,
};

static const struct xkind cell_status_row = {
    .name = "status",
    .help = "cell N, state, started, ended, results",
    .mode = S_IFREG | 0444,
    .where = IN_CELL,
    .flags = XF_CELL,
    .render = render_cell_status,
};

static bool resfile_present(struct cell *cell, fuse_ino_t ino)
{
	return cell && cell_result_has(cell, ctx_ino_res(ino), ctx_ino_fmt(ino));
}

static const struct xkind resfile_row = {
    .name = "",
    .path = "contexts/NAME/results/K.FORMAT contexts/NAME/cells/N/results/K.FORMAT",
    .help = "format FORMAT (txt, html, png, json, ...) of displayed value K",
    .mode = S_IFREG | 0444,
    .flags = XF_CELL | XF_TRANSIENT,
    .render = render_resfile,
    .present = resfile_present,
};

/* Indexed by kind; a directory lists its files in the order of enum ctx_kind (ctxino.h). */
static const struct xkind *const rows[X_MAX] = {
    [X_DIR] = &ctx_top_row,	    [X_CLONE] = &clone_row,	[X_CTX] = &ctx_dir_row,
    [X_LANGUAGE] = &language_row,   [X_CWD] = &cwd_row,		[X_ENV] = &env_row,
    [X_TIMEOUT] = &timeout_row,	    [X_CTL] = &ctl_row,		[X_STATUS] = &status_row,
    [X_CODE] = &code_row,	    [X_STDOUT] = &stdout_row,	[X_STDERR] = &stderr_row,
    [X_RESULT] = &result_row,	    [X_ERROR] = &error_row,	[X_CSTATUS] = &cell_status_row,
    [X_RESULTS] = &ctx_results_row, [X_RESFILE] = &resfile_row, [X_CELLS] = &ctx_cells_row,
    [X_CELLDIR] = &ctx_celldir_row,
};

const struct xkind *ctx_row(enum ctx_kind k)
{
	static const struct xkind none = {.name = ""};

	return (unsigned)k < X_MAX && rows[k] ? rows[k] : &none;
}
