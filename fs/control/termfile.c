/* A terminal's open files (sessions/ID/terms/NAME/): cmd, in, out, screen, size, ctl, exit and
 * status. Readers of out and exit are parked (park.h) rather than blocked, a writer to a full
 * input queue too; writes are checked in write() itself so tools see the errno, and a write
 * that fails applies nothing. */
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

#include "ctl.h"
#include "fhandle.h"
#include "loop.h"
#include "reply.h"
#include "session.h"
#include "term.h"
#include "xmalloc.h"

/* a ctl or size write longer than any line it takes */
#define LINE_MAX_BYTES 4096

struct termfh {
	struct fhandle h; /* h.lock: wbuf, shift, pos and poll state */
	enum ctl_kind kind;
	struct session *s;
	struct term *t;
	char *snap;	      /* cmd, screen, size, status: the text read back */
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

/* The text a read of the file gives whole, or NULL for the other kinds; settled: once the
 * emulator has caught up (a second at most), for a read rather than a size. */
static char *render(enum ctl_kind k, struct term *t, size_t *len, bool settled)
{
	char *text;

	switch (k) {
	case K_TCMD:
		return term_cmd(t, len);
	case K_TSCREEN:
		return term_screen(t, len, settled);
	case K_TSIZE:
		text = term_size_text(t);
		break;
	case K_TSTATUS:
		text = term_status(t, settled);
		break;
	default:
		return NULL;
	}
	*len = strlen(text);
	return text;
}

void termfile_stat(fuse_ino_t ino, struct session *s, struct stat *st)
{
	struct term *t = term_find_id(s, ino_term(ino));
	size_t len = 0;
	char *text;
	int status;

	if (!t)
		return;
	if (ino_kind(ino) == K_TOUT) {
		st->st_size = (off_t)term_out_end(t);
	} else if (ino_kind(ino) == K_TEXIT) {
		if (term_wait_exit(t, &status, NULL) == 0)
			st->st_size = snprintf(NULL, 0, "%d\n", status);
	} else if ((text = render(ino_kind(ino), t, &len, false))) {
		st->st_size = (off_t)len;
		free(text);
	}
	term_unref(t);
}

static bool writable(enum ctl_kind k)
{
	return k == K_TCMD || k == K_TIN || k == K_TSIZE || k == K_TCTL || k == K_TWAIT;
}

void termfile_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	enum ctl_kind k = ino_kind(ino);
	bool writing = (fi->flags & O_ACCMODE) != O_RDONLY;
	struct termfh *fh;

	if (k == K_TERMDIR) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if (writing && !writable(k)) {
		fuse_reply_err(req, EACCES);
		return;
	}
	fh = xcalloc(1, sizeof(*fh));
	fh->kind = k;
	fhandle_init(&fh->h, &open_files, fh_free);
	fh->s = ctl_session(ino);
	fh->t = fh->s ? term_find_id(fh->s, ino_term(ino)) : NULL;
	if (!fh->t) {
		fhandle_unref(&fh->h);
		fuse_reply_err(req, ENOENT);
		return;
	}
	fh->snap = render(k, fh->t, &fh->snaplen, true);
	if (k == K_TWAIT && (fi->flags & O_ACCMODE) == O_RDONLY &&
	    term_watch_open(fh->t, &fh->watch) < 0) {
		fhandle_unref(&fh->h);
		fuse_reply_err(req, EINVAL);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)fh;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fuse_reply_open(req, fi);
}

/* Answers a read of out or exit, or returns -EAGAIN (w queued if given). A read below the
 * oldest byte held starts there, and the open's later offsets follow on from it. */
static int try_read(fuse_req_t req, struct fhandle *h, size_t size, off_t off, struct waiter *w)
{
	struct termfh *fh = container_of(h, struct termfh, h);
	char text[16], *buf;
	uint64_t at;
	size_t n;
	int status, rc;

	if (fh->kind == K_TEXIT) {
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

void termfile_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct termfh *fh = fh_of(fi);

	if (fh->kind == K_TWAIT && !fh->watch) {
		fuse_reply_err(req, EINVAL); /* opened to write the pattern */
		return;
	}
	/* Once answered, the file may be released at once: hold fh until we are done with it. */
	fhandle_ref(&fh->h);
	if (fh->kind != K_TOUT && fh->kind != K_TEXIT && fh->kind != K_TWAIT) {
		if (fh->snap)
			reply_slice(req, fh->snap, fh->snaplen, size, off);
		else
			fuse_reply_err(req, EBADF);
		fhandle_unref(&fh->h);
		return;
	}
	if (fh->kind == K_TWAIT) {
		pthread_mutex_lock(&fh->h.lock);
		if (!fh->deadline_ns)
			fh->deadline_ns = loop_now_ns() + term_wait_ms() * 1000000u;
		pthread_mutex_unlock(&fh->h.lock);
		term_watch_scan(fh->watch); /* here, on a FUSE thread: the screen of now */
	}
	fhandle_read(req, &fh->h, size, off, fi->flags, fh->kind == K_TWAIT ? try_wait : try_read);
}

/* Keys go to the queue as typed; a full queue parks the writer as a full pty would block it
 * (O_NONBLOCK: EAGAIN). */
static ssize_t input(struct fhandle *h, const char *buf, size_t size, struct waiter *w)
{
	return term_input(container_of(h, struct termfh, h)->t, buf, size, w);
}

/* fh->h.lock held: adds a write to the pending bytes. */
static int append(struct termfh *fh, const char *buf, size_t size, size_t max)
{
	if (memchr(buf, '\0', size))
		return -EINVAL;
	if (fh->wlen + size > max)
		return fh->kind == K_TCMD ? -EFBIG : -EINVAL;
	fh->wbuf = xrealloc(fh->wbuf, fh->wlen + size + 1);
	memcpy(fh->wbuf + fh->wlen, buf, size);
	fh->wlen += size;
	return 0;
}

/* Each complete line of a size or ctl file: checked (apply false) or applied. */
static int line_do(struct termfh *fh, const char *line, size_t len, bool apply)
{
	unsigned rows, cols;
	int rc;

	if (fh->kind == K_TCTL)
		return len == 0 ? 0 : term_ctl(apply ? fh->t : NULL, line, len);
	rc = term_size_parse(line, len, &rows, &cols);
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
			rc = line_do(fh, fh->wbuf + pos, n, pass == 1);
		}
	}
	memmove(fh->wbuf, fh->wbuf + end, fh->wlen - end);
	fh->wlen -= end;
	return rc;
}

/* Each write is one pattern, checked and kept for the reads of wait that open after it. */
static void write_pattern(fuse_req_t req, struct termfh *fh, const char *buf, size_t size)
{
	int rc = term_set_pattern(fh->t, buf, size);

	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, size);
}

void termfile_write(fuse_req_t req, const char *buf, size_t size, struct fuse_file_info *fi)
{
	struct termfh *fh = fh_of(fi);
	int rc;

	if (fh->kind == K_TIN) {
		fhandle_write(req, &fh->h, buf, size, fi->flags, input);
		return;
	}
	if (fh->kind == K_TWAIT) {
		write_pattern(req, fh, buf, size);
		return;
	}
	pthread_mutex_lock(&fh->h.lock);
	rc = fh->werr;
	if (rc == 0 && fh->kind == K_TCMD)
		rc = term_cmd_settable(fh->t);
	if (rc == 0)
		rc = append(fh, buf, size, fh->kind == K_TCMD ? SESSION_CMD_MAX : LINE_MAX_BYTES);
	if (rc == 0 && fh->kind != K_TCMD)
		rc = apply_lines(fh, false);
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
void termfile_flush(fuse_req_t req, struct fuse_file_info *fi)
{
	struct termfh *fh = fh_of(fi);
	int rc = 0;

	pthread_mutex_lock(&fh->h.lock);
	if (fh->wlen && !fh->werr)
		rc = fh->kind == K_TCMD ? term_start(fh->t, fh->wbuf, fh->wlen)
					: apply_lines(fh, true);
	fh->wlen = 0;
	pthread_mutex_unlock(&fh->h.lock);
	fuse_reply_err(req, rc == -ESRCH ? ESRCH : -rc);
}

void termfile_release(fuse_req_t req, struct fuse_file_info *fi)
{
	struct termfh *fh = fh_of(fi);

	fhandle_release(&fh->h);
	fuse_reply_err(req, 0);
}

static bool poll_ready(struct fhandle *h, struct waiter *w)
{
	struct termfh *fh = container_of(h, struct termfh, h);
	int status;

	if (fh->kind == K_TEXIT)
		return term_wait_exit(fh->t, &status, w) != -EAGAIN;
	return term_out_poll(fh->t, fh->pos, w);
}

void termfile_poll(fuse_req_t req, struct fuse_file_info *fi, struct fuse_pollhandle *ph)
{
	struct termfh *fh = fh_of(fi);
	unsigned revents = POLLIN | POLLRDNORM;
	bool pollable = fh->kind == K_TOUT || fh->kind == K_TEXIT;

	if (writable(fh->kind))
		revents |= POLLOUT | POLLWRNORM;
	fhandle_poll(req, &fh->h, ph, revents, pollable ? poll_ready : NULL);
}
