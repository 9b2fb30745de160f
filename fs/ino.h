/* Inode numbers of the control tree. A control inode is odd and encodes the session's serial
 * (0 for the root level) and the file's kind, so no table is needed and a number is never
 * reused for another session. Workspace inodes are even (see workspace.h). */
#ifndef SBX_INO_H
#define SBX_INO_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <stdint.h>

enum ctl_kind {
	K_ROOT,
	K_README,
	K_SESSIONS,
	K_CLONE,
	K_SDIR, /* sessions/<id>/ */
	K_CMD,
	K_STDOUT,
	K_STDERR,
	K_EXIT,
	K_ENV,
	K_CWD,
	K_MAX
};

#define KIND_BITS 6

static inline fuse_ino_t ctl_ino(uint64_t serial, enum ctl_kind kind)
{
	return (fuse_ino_t)((((serial << KIND_BITS) | kind) << 1) | 1);
}

static inline enum ctl_kind ino_kind(fuse_ino_t ino)
{
	return (enum ctl_kind)((ino >> 1) & ((1u << KIND_BITS) - 1));
}

static inline uint64_t ino_serial(fuse_ino_t ino)
{
	return (uint64_t)ino >> (KIND_BITS + 1);
}

#endif
