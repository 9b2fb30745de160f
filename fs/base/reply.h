/* Replies shared by the open files of the control tree (ctlread.c), of terminals (termfile.c)
 * and of contexts (ctxfile.c): a read of a text rendered whole, of a run handle's answer, of an
 * output's extent. */
#ifndef SBX_REPLY_H
#define SBX_REPLY_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>

/* Replies the part of text (len bytes) that a read of size bytes at off asks for. */
static inline void reply_slice(fuse_req_t req, const char *text, size_t len, size_t size, off_t off)
{
	if ((size_t)off >= len) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	fuse_reply_buf(req, text + off, len - (size_t)off < size ? len - (size_t)off : size);
}

/* Replies the next bytes of a run handle's answer, whatever the read's offset: the answer is
 * read in order (its number, then EOF), as a pipe is. */
static inline void reply_answer(fuse_req_t req, const char *ans, size_t len, size_t *off,
				size_t size)
{
	size_t n = len - *off < size ? len - *off : size;

	fuse_reply_buf(req, ans + *off, n);
	*off += n;
}

/* Replies n bytes of fd at off, spliced (n 0: end of file). */
static inline void reply_extent(fuse_req_t req, int fd, size_t n, off_t off)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(n);

	if (n == 0) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	bv.buf[0].fd = fd;
	bv.buf[0].pos = off;
	fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_MOVE);
}

#endif
