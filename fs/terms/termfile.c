/* A terminal's open files (sessions/ID/terms/NAME/): cmd, in, out, screen, size, ctl, exit,
 * wait and status, each kind as its row says (termkind.h; the rows are at the end). Readers of
 * out and exit are parked (park.h) rather than blocked, a writer to a full input queue too;
 * writes are checked in write() itself so tools see the errno, and a write that fails applies
 * nothing. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "fhandle.h"
#include "loop.h"
#include "refusals.h"
#include "reply.h"
#include "session.h"
#include "term.h"
#include "termfs.h"
#include "termkind.h"
#include "verb.h"
#include "xmalloc.h"

/* a ctl or size write longer than any line it takes */
#define LINE_MAX_BYTES 4096

struct termfh {
	struct fhandle h; /* h.lock: wbuf, shift, pos and poll state */
	enum term_file kind;
	struct session *s;
	struct term *t;
	char *snap; /* cmd, screen, size, status: the text read back */
	size_t snaplen;
	char *wbuf; /* cmd: applied at close; size, ctl: a line not yet complete */
	size_t wlen;
	int werr;	/* the first failed write's -errno: the open applies nothing more */
	uint64_t shift; /* out: how far the ring moved past this open's offsets */
	uint64_t pos;	/* out: end of the last read, for poll */
	struct termemu_watch *watch; /* wait opened for reading: its pattern on the screen */
	uint64_t deadline_ns;	     /* wait: set by the first read */
};

static struct fhandle_list open_files = FHANDLE_LIST_INIT(open_files);

static struct termfh *fh_of(struct fuse_file_info *fi)
{
	return (struct termfh *)(uintptr_t)fi->fh;
}

static const struct term_kind *fh_row(const struct termfh *fh)
{
	return term_row(fh->kind);
}

static void fh_free(struct fhandle *h)
{
	struct termfh *fh = container_of(h, struct termfh, h);

	if (fh->watch)
		term_watch_close(fh->watch);
	if (fh->t)
		term_unref(fh->t);
	if (fh->s)
		session_unref(fh->s);
	free(fh->snap);
	free(fh->wbuf);
	free(fh);
}

void termfile_shutdown(void)
{
	fhandle_shutdown(&open_files);
}

static char *render_cmd(struct term *t, size_t *len, bool settled)
{
	(void)settled;
	return term_cmd(t, len);
}

static char *render_size(struct term *t, size_t *len, bool settled)
{
	(void)settled;
	char *text = term_size_text(t);

	*len = strlen(text);
	return text;
}

static char *render_status(struct term *t, size_t *len, bool settled)
{
	char *text = term_status(t, settled);

	*len = strlen(text);
	return text;
}

static void size_out(struct term *t, struct stat *st)
{
	st->st_size = (off_t)term_out_end(t);
}

static void size_exit(struct term *t, struct stat *st)
{
	int status;

	if (term_wait_exit(t, &status, NULL) == 0)
		st->st_size = snprintf(NULL, 0, "%d\n", status);
}

void termfile_stat(fuse_ino_t ino, struct session *s, struct stat *st)
{
	const struct term_kind *k = term_row(ino_kind(ino));
	struct term *t = term_find_id(s, ino_term(ino));
	size_t len = 0;
	char *text;

	if (!t)
		return;
	if (k->size) {
		k->size(t, st);
	} else if (k->render && (text = k->render(t, &len, false))) {
		st->st_size = (off_t)len;
		free(text);
	}
	term_unref(t);
}

static bool writable(const struct term_kind *k)
{
	return k->write || k->add;
}

/* wait opened for reading: the terminal's pattern of now; -EINVAL if none was written. */
static int open_pattern(struct termfh *fh, int flags)
{
	if ((flags & O_ACCMODE) != O_RDONLY)
		return 0;
	return term_watch_open(fh->t, &fh->watch) < 0 ? -EINVAL : 0;
}

void termfile_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	const struct term_kind *k = term_row(ino_kind(ino));
	bool writing = (fi->flags & O_ACCMODE) != O_RDONLY;
	struct termfh *fh;

	if (!S_ISREG(k->mode)) {
		fuse_reply_err(req, k->mode ? EISDIR : ENOENT);
		return;
	}
	if (writing && !writable(k)) {
		fuse_reply_err(req, EACCES);
		return;
	}
	fh = xcalloc(1, sizeof(*fh));
	fh->kind = ino_kind(ino);
	fhandle_init(&fh->h, &open_files, fh_free);
	fh->s = session_find_serial(ino_serial(ino));
	fh->t = fh->s ? term_find_id(fh->s, ino_term(ino)) : NULL;
	if (!fh->t) {
		fhandle_unref(&fh->h);
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (k->render)
		fh->snap = k->render(fh->t, &fh->snaplen, true);
	if (k->open && k->open(fh, fi->flags) < 0) {
		fhandle_unref(&fh->h);
		fuse_reply_err(req, EINVAL);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)fh;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fuse_reply_open(req, fi);
}

/* Answers a read of exit, or returns -EAGAIN (w queued if given). */
static int try_exit(fuse_req_t req, struct fhandle *h, size_t size, off_t off, struct waiter *w)
{
	struct termfh *fh = container_of(h, struct termfh, h);
	char text[16];
	int status, rc;

	rc = term_wait_exit(fh->t, &status, w);
	if (rc == -EAGAIN)
		return rc;
	if (rc == 0)
		snprintf(text, sizeof(text), "%d\n", status);
	else
		text[0] = '\0';
	reply_slice(req, text, strlen(text), size, off);
	return 0;
}

/* Answers a read of out, or returns -EAGAIN (w queued if given). A read below the oldest byte
 * held starts there, and the open's later offsets follow on from it. */
static int try_out(fuse_req_t req, struct fhandle *h, size_t size, off_t off, struct waiter *w)
{
	struct termfh *fh = container_of(h, struct termfh, h);
	char *buf;
	uint64_t at;
	size_t n;
	int rc;

	pthread_mutex_lock(&fh->h.lock);
	at = (uint64_t)off + fh->shift;
	pthread_mutex_unlock(&fh->h.lock);
	buf = xmalloc(size ? size : 1);
	rc = term_out_read(fh->t, &at, buf, size, &n, w);
	if (rc == 0) {
		pthread_mutex_lock(&fh->h.lock);
		if (at > (uint64_t)off + fh->shift)
			fh->shift = at - (uint64_t)off;
		fh->pos = at + n;
		pthread_mutex_unlock(&fh->h.lock);
		fuse_reply_buf(req, buf, n);
	}
	free(buf);
	return rc;
}

/* wait: the matching line once the screen has one; ETIMEDOUT after term_wait_ms, EOF once
 * the terminal ended without one. Only looks at what the matching found: this runs on the loop
 * thread once parked. */
static int try_wait(fuse_req_t req, struct fhandle *h, size_t size, off_t off, struct waiter *w)
{
	struct termfh *fh = container_of(h, struct termfh, h);
	char *line;
	int rc = term_watch_poll(fh->t, fh->watch, fh->deadline_ns, &line, w);

	if (rc == -EAGAIN)
		return rc;
	if (rc == 0)
		reply_slice(req, line, strlen(line), size, off);
	else if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, NULL, 0);
	free(line);
	return 0;
}

/* wait: a read needs the pattern it was opened with, and its deadline starts at the first. */
static int wait_begin(struct termfh *fh)
{
	if (!fh->watch)
		return -EINVAL; /* opened to write the pattern */
	pthread_mutex_lock(&fh->h.lock);
	if (!fh->deadline_ns)
		fh->deadline_ns = loop_now_ns() + term_wait_ms() * 1000000u;
	pthread_mutex_unlock(&fh->h.lock);
	term_watch_scan(fh->watch); /* here, on a FUSE thread: the screen of now */
	return 0;
}

void termfile_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	struct termfh *fh = fh_of(fi);
	const struct term_kind *k = fh_row(fh);
	int rc;

	(void)ino;
	if (k->read_begin && (rc = k->read_begin(fh)) < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	/* Once answered, the file may be released at once: hold fh until we are done with it. */
	fhandle_ref(&fh->h);
	if (k->read) {
		fhandle_read(req, &fh->h, size, off, fi->flags, k->read);
		return;
	}
	if (fh->snap)
		reply_slice(req, fh->snap, fh->snaplen, size, off);
	else
		fuse_reply_err(req, EBADF);
	fhandle_unref(&fh->h);
}

/* Keys go to the queue as typed; a full queue parks the writer as a full pty would block it
 * (O_NONBLOCK: EAGAIN). */
static ssize_t input(struct fhandle *h, const char *buf, size_t size, struct waiter *w)
{
	return term_input(container_of(h, struct termfh, h)->t, buf, size, w);
}

static int write_input(fuse_req_t req, struct termfh *fh, const char *buf, size_t size, int flags)
{
	fhandle_write(req, &fh->h, buf, size, flags, input);
	return TERM_REPLIED;
}

/* fh->h.lock held: adds a write to the pending bytes; too_big if past max. */
static int append(struct termfh *fh, const char *buf, size_t size, size_t max, int too_big)
{
	if (memchr(buf, '\0', size))
		return -EINVAL;
	if (fh->wlen + size > max)
		return too_big;
	fh->wbuf = xrealloc(fh->wbuf, fh->wlen + size + 1);
	memcpy(fh->wbuf + fh->wlen, buf, size);
	fh->wlen += size;
	return 0;
}

/* A complete line of ctl: checked (apply false) or applied; an empty one is no verb. */
/* A refused write to the terminal's file of kind name, in the errors file. */
static void refuse(struct termfh *fh, const char *name, const char *why)
{
	char *path =
	    xasprintf("sessions/%s/terms/%s/%s", session_id(fh->s), term_name(fh->t), name);

	refusal_note(path, EINVAL, "%s", why);
	free(path);
}

static int line_ctl(struct termfh *fh, const char *line, size_t len, bool apply)
{
	int rc = len == 0 ? 0 : term_ctl(apply ? fh->t : NULL, line, len);

	if (rc == -EINVAL && !apply)
		refuse(fh, "ctl", verb_why());
	return rc;
}

/* A complete line of size: checked (apply false) or applied. */
static int line_size(struct termfh *fh, const char *line, size_t len, bool apply)
{
	unsigned rows, cols;
	int rc;

	rc = term_size_parse(line, len, &rows, &cols);
	if (rc == -EINVAL)
		refuse(fh, "size", "ROWS COLS: rows from 1 and columns from 2, each at most 1000");
	return rc < 0 || !apply ? rc : term_resize(fh->t, rows, cols);
}

/* fh->h.lock held: every complete line is checked, then all of them apply, and they leave the
 * buffer; with all, the rest too (at close). */
static int apply_lines(struct termfh *fh, bool all)
{
	size_t end = fh->wlen, pos, n;
	int pass, rc = 0;

	if (!all) {
		const char *nl = memrchr(fh->wbuf, '\n', fh->wlen);

		end = nl ? (size_t)(nl - fh->wbuf) + 1 : 0;
	}
	for (pass = 0; pass < 2 && rc == 0; pass++) {
		for (pos = 0; pos < end && rc == 0; pos += n + 1) {
			const char *nl = memchr(fh->wbuf + pos, '\n', end - pos);

			n = nl ? (size_t)(nl - (fh->wbuf + pos)) : end - pos;
			rc = fh_row(fh)->line(fh, fh->wbuf + pos, n, pass == 1);
		}
	}
	memmove(fh->wbuf, fh->wbuf + end, fh->wlen - end);
	fh->wlen -= end;
	return rc;
}

/* Each write is one pattern, checked and kept for the reads of wait that open after it. */
static int write_pattern(fuse_req_t req, struct termfh *fh, const char *buf, size_t size, int flags)
{
	int rc = term_set_pattern(fh->t, buf, size);

	(void)req;
	(void)flags;
	if (rc == -EINVAL)
		refuse(fh, "wait", "one line of a regular expression (see docs/terminals.md)");
	return rc;
}

/* cmd: kept whole and started at close, while the terminal has not started. */
static int add_cmd(struct termfh *fh, const char *buf, size_t size)
{
	int rc = term_cmd_settable(fh->t);

	return rc < 0 ? rc : append(fh, buf, size, SESSION_CMD_MAX, -EFBIG);
}

static int start_cmd(struct termfh *fh)
{
	return term_start(fh->t, fh->wbuf, fh->wlen);
}

/* size and ctl: each complete line is checked and applied at once, the rest kept. */
static int add_lines(struct termfh *fh, const char *buf, size_t size)
{
	int rc = append(fh, buf, size, LINE_MAX_BYTES, -EINVAL);

	return rc < 0 ? rc : apply_lines(fh, false);
}

/* At close, a last line without its newline applies. */
static int apply_rest(struct termfh *fh)
{
	return apply_lines(fh, true);
}

void termfile_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct termfh *fh = fh_of(fi);
	const struct term_kind *k = fh_row(fh);
	int rc;

	(void)ino;
	(void)off;
	if (k->write) {
		rc = k->write(req, fh, buf, size, fi->flags);
		if (rc == TERM_REPLIED)
			return;
		if (rc < 0)
			fuse_reply_err(req, -rc);
		else
			fuse_reply_write(req, size);
		return;
	}
	pthread_mutex_lock(&fh->h.lock);
	rc = fh->werr;
	if (rc == 0)
		rc = k->add(fh, buf, size);
	/* ESRCH: nothing to signal, no fault of the line */
	if (rc < 0 && rc != -ESRCH && rc != -EBUSY && !fh->werr)
		fh->werr = rc;
	pthread_mutex_unlock(&fh->h.lock);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, size);
}

/* What is pending applies at close: cmd starts the terminal, a last line without its newline
 * applies. */
void termfile_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct termfh *fh = fh_of(fi);
	int rc = 0;

	(void)ino;
	pthread_mutex_lock(&fh->h.lock);
	if (fh->wlen && !fh->werr && fh_row(fh)->apply)
		rc = fh_row(fh)->apply(fh);
	fh->wlen = 0;
	pthread_mutex_unlock(&fh->h.lock);
	fuse_reply_err(req, rc == -ESRCH ? ESRCH : -rc);
}

void termfile_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct termfh *fh = fh_of(fi);

	(void)ino;
	fhandle_release(&fh->h);
	fuse_reply_err(req, 0);
}

static bool poll_exit(struct fhandle *h, struct waiter *w)
{
	int status;

	return term_wait_exit(container_of(h, struct termfh, h)->t, &status, w) != -EAGAIN;
}

static bool poll_out(struct fhandle *h, struct waiter *w)
{
	struct termfh *fh = container_of(h, struct termfh, h);

	return term_out_poll(fh->t, fh->pos, w);
}

void termfile_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		   struct fuse_pollhandle *ph)
{
	struct termfh *fh = fh_of(fi);
	unsigned revents = POLLIN | POLLRDNORM;

	(void)ino;
	if (writable(fh_row(fh)))
		revents |= POLLOUT | POLLWRNORM;
	fhandle_poll(req, &fh->h, ph, revents, fh_row(fh)->poll);
}

/* The rows. */

#define DIR_MODE (S_IFDIR | 0755)

/* a session's terms/: listed in the session's directory by fs/control, which answers the
 * attributes of a session's directory for it, as termfs.c does */
static const struct term_kind terms_row = {
    .name = "terms",
    .help = "the session's terminals, one directory each",
    .mode = DIR_MODE,
};

static const struct term_kind termdir_row = {
    .name = "",
    .help = "a program on a pty: mkdir makes it, cmd or in starts it, rmdir ends it",
    .mode = DIR_MODE,
};

/* the command it runs (the session's shell if none), written before it starts */
static const struct term_kind cmd_row = {
    .name = "cmd",
    .help = "a shell line, before the start: it starts at close",
    .mode = S_IFREG | 0644,
    .render = render_cmd,
    .add = add_cmd,
    .apply = start_cmd,
};

/* keys */
static const struct term_kind in_row = {
    .name = "in",
    .help = "bytes to the pty as typed (\\x03 Ctrl-C, \\r Enter)",
    .mode = S_IFREG | 0200,
    .write = write_input,
};

/* what it wrote, as a stream */
static const struct term_kind out_row = {
    .name = "out",
    .help = "the raw output, escape sequences included; tail -f follows it",
    .mode = S_IFREG | 0444,
    .size = size_out,
    .read = try_out,
    .poll = poll_out,
};

static const struct term_kind screen_row = {
    .name = "screen",
    .help = "the screen now as plain text",
    .mode = S_IFREG | 0444,
    .render = term_screen,
};

static const struct term_kind size_row = {
    .name = "size",
    .help = "ROWS COLS; write it to resize",
    .mode = S_IFREG | 0644,
    .render = render_size,
    .add = add_lines,
    .line = line_size,
    .apply = apply_rest,
};

static const struct term_kind ctl_row = {
    .name = "ctl",
    .help = "write: kill [SIGNAL] | interrupt | eof",
    .mode = S_IFREG | 0200,
    .add = add_lines,
    .line = line_ctl,
    .apply = apply_rest,
};

static const struct term_kind exit_row = {
    .name = "exit",
    .help = "blocks until the program ends, then its exit status",
    .mode = S_IFREG | 0444,
    .size = size_exit,
    .read = try_exit,
    .poll = poll_exit,
};

/* write a pattern; read: the screen's first line it matches, once there is one */
static const struct term_kind wait_row = {
    .name = "wait",
    .help = "write a regular expression; a read blocks until a line matches it",
    .mode = S_IFREG | 0644,
    .open = open_pattern,
    .read_begin = wait_begin,
    .read = try_wait,
    .write = write_pattern,
};

static const struct term_kind status_row = {
    .name = "status",
    .help = "name, state, pid, rows, cols, cursor, exit, ...",
    .mode = S_IFREG | 0444,
    .render = render_status,
};

/* Indexed by kind; a terminal's directory lists its files in the order of enum term_file. */
static const struct term_kind *const term_kinds[T_MAX] = {
    [T_TERMS] = &terms_row, [T_DIR] = &termdir_row,   [T_CMD] = &cmd_row,	[T_IN] = &in_row,
    [T_OUT] = &out_row,	    [T_SCREEN] = &screen_row, [T_SIZE] = &size_row,	[T_CTL] = &ctl_row,
    [T_EXIT] = &exit_row,   [T_WAIT] = &wait_row,     [T_STATUS] = &status_row,
};

const struct term_kind *term_row(enum term_file k)
{
	static const struct term_kind none = {.name = ""};

	return (unsigned)k < T_MAX && term_kinds[k] ? term_kinds[k] : &none;
}
