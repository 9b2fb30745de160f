/* Inode numbers of snapshots/: odd, with bit 63 set and bits 1-5 all ones (ino.h). Bits: 6-9
 * kind, 10-33 the snapshot's serial (0: snapshots/ itself, its clone, ctl and import/), 34-62
 * a node of its files/ view (0: files/ itself). */
#ifndef SBX_SNAPINO_H
#define SBX_SNAPINO_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <stdint.h>

#include "ino.h"

enum snap_kind {
	N_DIR,	   /* snapshots/ */
	N_CLONE,   /* snapshots/clone */
	N_CTL,	   /* snapshots/ctl */
	N_IMPORT,  /* snapshots/import/ */
	N_IMPFILE, /* snapshots/import/NAME, while it is written */
	N_SNAP,	   /* snapshots/NAME/ */
	N_STATUS,
	N_SCTL, /* NAME/ctl */
	N_ARCHIVE,
	N_NODE, /* NAME/files/ and everything in it */
	N_MAX
};

#define SNAP_NODE_MAX ((1ull << 29) - 1)

static inline fuse_ino_t snap_ino(uint32_t serial, enum snap_kind k, uint64_t node)
{
	return XINO_FLAG | (node << 34) | ((uint64_t)serial << 10) | ((uint64_t)k << 6) |
	       SNAP_INO_MARK | 1;
}

static inline enum snap_kind snap_ino_kind(fuse_ino_t ino)
{
	return (enum snap_kind)((ino >> 6) & 0xf);
}

static inline uint32_t snap_ino_serial(fuse_ino_t ino)
{
	return (uint32_t)((ino >> 10) & 0xffffff);
}

static inline uint64_t snap_ino_node(fuse_ino_t ino)
{
	return (ino >> 34) & SNAP_NODE_MAX;
}

#endif
