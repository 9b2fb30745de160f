/* An output ring of absolute offsets (see termring.h): a terminal's output, the network log. */
#include "termring.h"

#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

void termring_init(struct termring *r, size_t cap)
{
	r->cap = cap ? cap : 1;
	r->buf = xmalloc(r->cap);
	r->end = 0;
}

void termring_free(struct termring *r)
{
	free(r->buf);
	r->buf = NULL;
}

void termring_put(struct termring *r, const char *data, size_t len)
{
	if (len > r->cap) {
		/* only the last cap bytes stay */
		r->end += len - r->cap;
		data += len - r->cap;
		len = r->cap;
	}
	while (len > 0) {
		size_t at = (size_t)(r->end % r->cap);
		size_t n = r->cap - at < len ? r->cap - at : len;

		memcpy(r->buf + at, data, n);
		r->end += n;
		data += n;
		len -= n;
	}
}

uint64_t termring_oldest(const struct termring *r)
{
	return r->end > r->cap ? r->end - r->cap : 0;
}

size_t termring_get(const struct termring *r, uint64_t off, char *out, size_t len)
{
	size_t done = 0;

	if (off < termring_oldest(r))
		off = termring_oldest(r);
	if (off >= r->end)
		return 0;
	if (len > r->end - off)
		len = (size_t)(r->end - off);
	while (done < len) {
		size_t at = (size_t)((off + done) % r->cap);
		size_t n = r->cap - at < len - done ? r->cap - at : len - done;

		memcpy(out + done, r->buf + at, n);
		done += n;
	}
	return done;
}
