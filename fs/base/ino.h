/* Inode numbers: the encoding the parts share, and nothing of their kinds. Workspace inodes are
 * even (workspace.h). The others are odd, and bits 1-3 name the part that serves them (enum
 * part_tag); the part owns the 60 bits above, its payload, and says in its own header what
 * they hold. The mount's root (1) is the control part's payload 0.
 *
 * Parts whose files belong to a session share one layout of the payload (tree_ino): bits 0-5 a
 * kind, 6 a flag, 7-30 a number, 31-59 a serial (a session's, or 0 at the root). Two addresses
 * are known across parts: a session's directory, and its terms/. */
#ifndef SBX_INO_H
#define SBX_INO_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>

enum part_tag {
	PART_CONTROL,
	PART_TERMS,
	PART_PORTS,
	PART_CONTEXTS,
	PART_SNAPSHOTS,
	PART_SNAPVIEW, /* the files/ view of each snapshot */
	PART_MAX
};

#define PART_BITS     3
#define PAYLOAD_SHIFT (PART_BITS + 1)
#define PAYLOAD_BITS  (64 - PAYLOAD_SHIFT)
_Static_assert(PART_MAX <= 1 << PART_BITS, "a new part needs a wider tag");

static inline fuse_ino_t part_ino(enum part_tag tag, uint64_t payload)
{
	return (fuse_ino_t)((payload << PAYLOAD_SHIFT) | ((uint64_t)tag << 1) | 1);
}

/* The part of an odd inode. */
static inline enum part_tag ino_part(fuse_ino_t ino)
{
	return (enum part_tag)((ino >> 1) & ((1u << PART_BITS) - 1));
}

static inline uint64_t ino_payload(fuse_ino_t ino)
{
	return (uint64_t)ino >> PAYLOAD_SHIFT;
}

/* The layout of a session's files. A part's kinds fit TREE_KINDS (its enum asserts it). */
#define TREE_KIND_BITS	  6
#define TREE_KINDS	  (1u << TREE_KIND_BITS)
#define TREE_FLAG	  (1ull << TREE_KIND_BITS)
#define TREE_NUM_SHIFT	  (TREE_KIND_BITS + 1)
#define TREE_NUM_BITS	  24
#define TREE_NUM_MAX	  ((1u << TREE_NUM_BITS) - 1)
#define TREE_SERIAL_SHIFT (TREE_NUM_SHIFT + TREE_NUM_BITS)
#define TREE_SERIAL_MAX	  ((1ull << (PAYLOAD_BITS - TREE_SERIAL_SHIFT)) - 1)

static inline fuse_ino_t tree_ino(enum part_tag tag, uint64_t serial, unsigned kind, unsigned num,
				  bool flag)
{
	return part_ino(tag, (serial << TREE_SERIAL_SHIFT) | ((uint64_t)num << TREE_NUM_SHIFT) |
				 (flag ? TREE_FLAG : 0) | kind);
}

static inline unsigned ino_kind(fuse_ino_t ino)
{
	return (unsigned)(ino_payload(ino) & (TREE_KINDS - 1));
}

static inline bool ino_flag(fuse_ino_t ino)
{
	return ino_payload(ino) & TREE_FLAG;
}

static inline unsigned ino_num(fuse_ino_t ino)
{
	return (unsigned)((ino_payload(ino) >> TREE_NUM_SHIFT) & TREE_NUM_MAX);
}

static inline uint64_t ino_serial(fuse_ino_t ino)
{
	return ino_payload(ino) >> TREE_SERIAL_SHIFT;
}

/* The addresses one part gives another: sessions/ID/ (the control part's kind TREE_SESSION_DIR)
 * and sessions/ID/terms/ (the terms part's kind TREE_TOP). */
#define TREE_TOP	 0
#define TREE_SESSION_DIR 5

static inline fuse_ino_t session_dir_ino(uint64_t serial)
{
	return tree_ino(PART_CONTROL, serial, TREE_SESSION_DIR, 0, false);
}

static inline fuse_ino_t terms_dir_ino(uint64_t serial)
{
	return tree_ino(PART_TERMS, serial, TREE_TOP, 0, false);
}

#endif
