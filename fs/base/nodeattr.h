/* Attributes of the files sbxfs makes up (the control tree, terminals, contexts), so the three
 * agree on owner, links and block size, and on which setattr a file takes. */
#ifndef SBX_NODEATTR_H
#define SBX_NODEATTR_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <time.h>

/* st as the file ino of mode, made at *t (NULL: when the daemon started), with no size yet: the
 * daemon's owner, 4 KiB blocks. */
void nodeattr_init(struct stat *st, fuse_ino_t ino, mode_t mode, const struct timespec *t);
/* st_blocks from st_size, once the size is known. */
void nodeattr_blocks(struct stat *st);
/* Whether setattr to_set (values in attr) is a no-op a file of mode takes: `echo x > f`
 * truncates to 0 and `touch` sets times, which one may do to the files one writes to. Read-only
 * files refuse even root. */
bool nodeattr_settable(mode_t mode, const struct stat *attr, int to_set);
/* Replies a getattr with st, or with the error rc (-errno) a part's stat gave. */
void nodeattr_reply(fuse_req_t req, int rc, const struct stat *st);

#endif
