/* The (device, inode) hash map (see inomap.h): open addressing, linear probing, grown at half
 * full. */
#include "inomap.h"

#include <stdlib.h>

#include "xmalloc.h"

void inomap_init(struct inomap *m)
{
	*m = (struct inomap){NULL, 0, 0};
}

static size_t slot_of(const struct inomap *m, uint64_t dev, uint64_t ino)
{
	uint64_t h = (ino ^ (dev << 32) ^ (dev >> 32)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 17) & (m->cap - 1);
}

struct inomap_slot *inomap_get(const struct inomap *m, uint64_t dev, uint64_t ino)
{
	if (!m->cap)
		return NULL;
	for (size_t i = slot_of(m, dev, ino);; i = (i + 1) & (m->cap - 1)) {
		struct inomap_slot *s = &m->v[i];

		if (!s->ino)
			return NULL;
		if (s->ino == ino && s->dev == dev)
			return s;
	}
}

static void grow(struct inomap *m)
{
	struct inomap old = *m;

	m->cap = old.cap ? old.cap * 2 : 64;
	m->v = xcalloc(m->cap, sizeof(*m->v));
	for (size_t i = 0; i < old.cap; i++) {
		struct inomap_slot *s = &old.v[i];
		size_t j;

		if (!s->ino)
			continue;
		for (j = slot_of(m, s->dev, s->ino); m->v[j].ino; j = (j + 1) & (m->cap - 1))
			;
		m->v[j] = *s;
	}
	free(old.v);
}

struct inomap_slot *inomap_put(struct inomap *m, uint64_t dev, uint64_t ino)
{
	struct inomap_slot *s = inomap_get(m, dev, ino);
	size_t i;

	if (s)
		return s;
	if ((m->n + 1) * 2 > m->cap)
		grow(m);
	for (i = slot_of(m, dev, ino); m->v[i].ino; i = (i + 1) & (m->cap - 1))
		;
	m->v[i] = (struct inomap_slot){dev, ino, NULL, 0, 0};
	m->n++;
	return &m->v[i];
}

void inomap_clear(struct inomap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->v[i].path);
	free(m->v);
	inomap_init(m);
}
