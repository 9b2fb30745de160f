/* An output ring: the last cap bytes of a stream, addressed by absolute offsets since its start
 * (a terminal's output, the network log). Not locked: its owner's lock covers it. */
#ifndef SBX_TERMRING_H
#define SBX_TERMRING_H

#include <stddef.h>
#include <stdint.h>

struct termring {
	char *buf;
	size_t cap;
	uint64_t end; /* offset of the next byte; the oldest held is end - min(end, cap) */
};

void termring_init(struct termring *r, size_t cap);
void termring_free(struct termring *r);
void termring_put(struct termring *r, const char *data, size_t len);
uint64_t termring_oldest(const struct termring *r);
/* Copies up to len bytes from offset off (at least the oldest, at most the end). */
size_t termring_get(const struct termring *r, uint64_t off, char *out, size_t len);

#endif
