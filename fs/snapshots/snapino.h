/* Inode numbers of snapshots/: the snapshots part's payload (ino.h). Bits of the payload: 0-3
 * kind, 4-27 the snapshot's serial (0: snapshots/ itself, its clone, ctl and import/), 28-56 a
 * node of its files/ view (0: files/ itself). */
#ifndef SBX_SNAPINO_H
#define SBX_SNAPINO_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <stdint.h>

#include "ino.h"
#include "snapshot.h"

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
_Static_assert(N_MAX <= 16, "snapshots/'s kinds fit four bits");
_Static_assert(SNAPSHOT_SERIAL_MAX < 1u << 24, "a snapshot's serial fits its inodes");
_Static_assert(28 + 29 <= PAYLOAD_BITS, "a snapshot's inode fits the payload");

static inline fuse_ino_t snap_ino(uint32_t serial, enum snap_kind k, uint64_t node)
{
	return part_ino(PART_SNAPSHOTS, (node << 28) | ((uint64_t)serial << 4) | k);
}

static inline enum snap_kind snap_ino_kind(fuse_ino_t ino)
{
	return (enum snap_kind)(ino_payload(ino) & 0xf);
}

static inline uint32_t snap_ino_serial(fuse_ino_t ino)
{
	return (uint32_t)((ino_payload(ino) >> 4) & 0xffffff);
}

static inline uint64_t snap_ino_node(fuse_ino_t ino)
{
	return (ino_payload(ino) >> 28) & SNAP_NODE_MAX;
}

#endif
