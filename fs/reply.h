/* Replies shared by the open files of the control tree (ctlread.c) and of terminals
 * (termfile.c): a read of a text rendered whole. */
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

#endif
