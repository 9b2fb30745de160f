/* Inode numbers of snapshots/ (ino.h): the snapshots part's, whose payload is a kind (bits 0-3)
 * and a snapshot's serial (bits 4-27; 0: snapshots/ itself, its clone, ctl and import/); and
 * the files/ views', a part of their own, whose payload is the snapshot's serial (bits 0-23)
 * and a node of its view (bits 24-52; 0: files/ itself). */
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
	N_FILES, /* NAME/files/: listed here, served by the view */
	N_VIEW,	 /* an open file of a view (its handles' kind) */
	N_MAX
};

#define SNAP_SERIAL_BITS 24
#define SNAP_NODE_MAX	 ((1ull << 29) - 1)
_Static_assert(N_MAX <= 16, "snapshots/'s kinds fit four bits");
_Static_assert(SNAPSHOT_SERIAL_MAX < 1u << SNAP_SERIAL_BITS, "a snapshot's serial fits");
_Static_assert(SNAP_SERIAL_BITS + 29 <= PAYLOAD_BITS, "a view's inode fits the payload");

static inline fuse_ino_t snap_ino(uint32_t serial, enum snap_kind k)
{
	return part_ino(PART_SNAPSHOTS, ((uint64_t)serial << 4) | k);
}

static inline enum snap_kind snap_ino_kind(fuse_ino_t ino)
{
	return (enum snap_kind)(ino_payload(ino) & 0xf);
}

static inline uint32_t snap_ino_serial(fuse_ino_t ino)
{
	return (uint32_t)((ino_payload(ino) >> 4) & 0xffffff);
}

static inline fuse_ino_t view_ino(uint32_t serial, uint64_t node)
{
	return part_ino(PART_SNAPVIEW, (node << SNAP_SERIAL_BITS) | serial);
}

static inline uint32_t view_ino_serial(fuse_ino_t ino)
{
	return (uint32_t)(ino_payload(ino) & ((1u << SNAP_SERIAL_BITS) - 1));
}

static inline uint64_t view_ino_node(fuse_ino_t ino)
{
	return (ino_payload(ino) >> SNAP_SERIAL_BITS) & SNAP_NODE_MAX;
}

#endif
