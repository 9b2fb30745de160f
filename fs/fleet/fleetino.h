/* The fleet tree's inode numbers: 1 the root, 2 clone, 3 status; a sandbox of serial S has
 * S << 3 | KIND, one per file of its directory. */
#ifndef SBX_FLEETINO_H
#define SBX_FLEETINO_H

#include <stdint.h>

#define INO_CLONE  2
#define INO_STATUS 3

enum box_kind {
	FL_DIR,	   /* ID/ */
	FL_FS,	   /* ID/fs/, where its daemon mounts */
	FL_STATUS, /* ID/status */
	FL_KEEP,   /* ID/keep_alive */
	FL_CONFIG, /* ID/config */
	FL_KINDS,
};
_Static_assert(FL_KINDS <= 8, "a sandbox's kinds fit 3 bits");

static inline uint64_t serial_of(uint64_t ino)
{
	return ino >> 3;
}

/* Its kind, or -1 for the fleet's own inodes. */
static inline int kind_of(uint64_t ino)
{
	return ino > INO_STATUS ? (int)(ino & 7) : -1;
}

static inline uint64_t box_ino(uint64_t serial, enum box_kind kind)
{
	return serial << 3 | kind;
}

#endif
