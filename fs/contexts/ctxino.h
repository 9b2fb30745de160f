/* Inode numbers of contexts/: the contexts part's payload (ino.h). Bits of the payload: 0-4
 * kind, 5-26 cell number (0: the latest cell), 27-36 a displayed value's index, 37-40 its
 * format, 41-59 the context's serial (0: contexts/ itself and its clone). */
#ifndef SBX_CTXINO_H
#define SBX_CTXINO_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>

#include "context.h"
#include "ino.h"

enum ctx_kind {
	X_DIR,	 /* contexts/ */
	X_CLONE, /* contexts/clone */
	X_CTX,	 /* contexts/NAME/ */
	X_LANGUAGE,
	X_CWD,
	X_ENV,
	X_TIMEOUT,
	X_CTL,
	X_STATUS, /* the context's status */
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

_Static_assert(X_MAX <= 32, "contexts/'s kinds fit five bits");

#define CTX_CELL_MAX   CONTEXT_CELLS_MAX
#define CTX_RES_MAX    ((1u << 10) - 1)
#define CTX_SERIAL_MAX CONTEXT_SERIAL_MAX
_Static_assert(41 + 19 <= PAYLOAD_BITS, "a context's inode fits the payload");

static inline fuse_ino_t ctx_ino(uint32_t serial, enum ctx_kind k, unsigned cell, unsigned res,
				 unsigned fmt)
{
	return part_ino(PART_CONTEXTS, ((uint64_t)serial << 41) | ((uint64_t)fmt << 37) |
					   ((uint64_t)res << 27) | ((uint64_t)cell << 5) | k);
}

static inline enum ctx_kind ctx_ino_kind(fuse_ino_t ino)
{
	return (enum ctx_kind)(ino_payload(ino) & 0x1f);
}

static inline unsigned ctx_ino_cell(fuse_ino_t ino)
{
	return (unsigned)((ino_payload(ino) >> 5) & CTX_CELL_MAX);
}

static inline unsigned ctx_ino_res(fuse_ino_t ino)
{
	return (unsigned)((ino_payload(ino) >> 27) & CTX_RES_MAX);
}

static inline unsigned ctx_ino_fmt(fuse_ino_t ino)
{
	return (unsigned)((ino_payload(ino) >> 37) & 0xf);
}

static inline uint32_t ctx_ino_serial(fuse_ino_t ino)
{
	return (uint32_t)((ino_payload(ino) >> 41) & CTX_SERIAL_MAX);
}

#endif
