/* Inode numbers of the control tree. A control inode is odd and encodes the session's serial
 * (0 for the root level), a run number (0: the session's own files, which follow the latest
 * run) and the file's kind, so no table is needed and a number is never reused for another
 * session. Workspace inodes are even (see workspace.h). */
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
	K_LIMITS,
	K_SESSIONS,
	K_CLONE,
	K_SDIR,   /* sessions/<id>/ */
	K_RUNS,   /* sessions/<id>/runs/ */
	K_RUNDIR, /* sessions/<id>/runs/<n>/ */
	K_CMD,
	K_STDOUT,
	K_STDERR,
	K_EXIT,
	K_STATUS,
	K_ENV,
	K_CWD,
	K_TIMEOUT,
	K_CTL,
	K_STDIN,
	K_MAX
};

#define KIND_BITS 6
#define RUN_BITS 25
#define RUN_MAX ((1u << RUN_BITS) - 1)

static inline fuse_ino_t ctl_ino(uint64_t serial, enum ctl_kind kind, unsigned run)
{
	return (fuse_ino_t)((serial << 32) | ((uint64_t)run << (KIND_BITS + 1)) |
			    ((uint64_t)kind << 1) | 1);
}

static inline enum ctl_kind ino_kind(fuse_ino_t ino)
{
	return (enum ctl_kind)((ino >> 1) & ((1u << KIND_BITS) - 1));
}

static inline unsigned ino_run(fuse_ino_t ino)
{
	return (unsigned)((ino >> (KIND_BITS + 1)) & RUN_MAX);
}

static inline uint64_t ino_serial(fuse_ino_t ino)
{
	return (uint64_t)ino >> 32;
}

#endif
