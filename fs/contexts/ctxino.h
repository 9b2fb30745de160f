/* Inode numbers of contexts/: odd like every control inode, with bit 63 set. Bits: 0 tag, 1-5
 * kind (never all ones: those are snapshots/'s, ino.h), 6-29 cell number (0: the latest cell),
 * 30-39 a displayed value's index, 40-43 its format, 44-62 the context's serial (0: contexts/
 * itself and its clone). */
#ifndef SBX_CTXINO_H
#define SBX_CTXINO_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>

#include "ino.h"

enum ctx_kind {
	X_DIR,     /* contexts/ */
	X_CLONE,   /* contexts/clone */
	X_CTX,     /* contexts/NAME/ */
	X_LANGUAGE,
	X_CWD,
	X_ENV,
	X_TIMEOUT,
	X_CTL,
	X_STATUS,  /* the context's status */
	X_CODE,
	X_STDOUT,
	X_STDERR,
	X_RESULT,
	X_ERROR,
	X_CSTATUS, /* a cell's status (cells/N/status) */
	X_RESULTS, /* results/ */
	X_RESFILE, /* results/K.FORMAT */
	X_CELLS,   /* cells/ */
	X_CELLDIR, /* cells/N/ */
	X_MAX
};

_Static_assert(X_MAX < 31, "kind 31 marks snapshots/'s inodes");

#define CTX_INO_FLAG (1ull << 63)
#define CTX_CELL_MAX ((1u << 24) - 1)
#define CTX_RES_MAX ((1u << 10) - 1)
#define CTX_SERIAL_MAX ((1u << 19) - 1)

static inline bool ctx_is_ino(fuse_ino_t ino)
{
	return (ino & 1) && (ino & CTX_INO_FLAG) && !ino_is_snap(ino);
}

static inline fuse_ino_t ctx_ino(uint32_t serial, enum ctx_kind k, unsigned cell, unsigned res,
				 unsigned fmt)
{
	return CTX_INO_FLAG | ((uint64_t)serial << 44) | ((uint64_t)fmt << 40) |
	       ((uint64_t)res << 30) | ((uint64_t)cell << 6) | ((uint64_t)k << 1) | 1;
}

static inline enum ctx_kind ctx_ino_kind(fuse_ino_t ino)
{
	return (enum ctx_kind)((ino >> 1) & 0x1f);
}

static inline unsigned ctx_ino_cell(fuse_ino_t ino)
{
	return (unsigned)((ino >> 6) & CTX_CELL_MAX);
}

static inline unsigned ctx_ino_res(fuse_ino_t ino)
{
	return (unsigned)((ino >> 30) & CTX_RES_MAX);
}

static inline unsigned ctx_ino_fmt(fuse_ino_t ino)
{
	return (unsigned)((ino >> 40) & 0xf);
}

static inline uint32_t ctx_ino_serial(fuse_ino_t ino)
{
	return (uint32_t)((ino >> 44) & CTX_SERIAL_MAX);
}

#endif
