/* A hash map keyed by (device, inode): the hard links a sync has met (the first name's path in
 * the destination and its inode there), and the sets of files a sync must copy. */
#ifndef SBX_INOMAP_H
#define SBX_INOMAP_H

#include <stddef.h>
#include <stdint.h>

struct inomap_slot {
	uint64_t dev, ino; /* ino 0: a free slot (no file has inode 0) */
	char *path;	   /* owned by the map; may be NULL */
	uint64_t value, aux;
};

struct inomap {
	struct inomap_slot *v;
	size_t cap, n;
};

void inomap_init(struct inomap *m);
/* The slot of (dev, ino), or NULL. */
struct inomap_slot *inomap_get(const struct inomap *m, uint64_t dev, uint64_t ino);
/* The slot of (dev, ino), added (path NULL, values 0) if it was not there. */
struct inomap_slot *inomap_put(struct inomap *m, uint64_t dev, uint64_t ino);
void inomap_clear(struct inomap *m);

#endif
