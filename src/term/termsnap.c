/* Screen snapshots (see termsnap.h). */
#include "termsnap.h"

#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

struct termsnap *termsnap_blank(unsigned rows, unsigned cols)
{
	struct termsnap *s = xcalloc(1, sizeof(*s) + rows + 1);

	s->refs = 1;
	s->rows = rows;
	s->cols = cols;
	memset(s->text, '\n', rows);
	s->len = rows;
	return s;
}

void termsnap_ref(struct termsnap *s)
{
	__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
}

void termsnap_unref(struct termsnap *s)
{
	if (s && __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(s);
}

char *termsnap_text(const struct termsnap *s, const char *notice, size_t *len)
{
	size_t nlen = notice ? strlen(notice) : 0;
	char *text;

	*len = nlen + s->len;
	text = xmalloc(*len + 1);
	if (notice)
		memcpy(text, notice, nlen);
	memcpy(text + nlen, s->text, s->len + 1);
	return text;
}

char *termsnap_match(const struct termsnap *s, const struct rx *rx)
{
	char *line = xmalloc(TERMSNAP_MATCH_MAX + 2), *match = NULL;
	const char *p = s->text, *end = s->text + s->len;

	for (unsigned row = 0; p < end && !match; row++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);

		if (n > TERMSNAP_MATCH_MAX)
			n = TERMSNAP_MATCH_MAX;
		memcpy(line, p, n);
		if (row == s->cursor_row) {
			size_t pad =
			    s->pad < TERMSNAP_MATCH_MAX - n ? s->pad : TERMSNAP_MATCH_MAX - n;

			memset(line + n, ' ', pad);
			n += pad;
		}
		if (rx_search(rx, line, n)) {
			line[n] = '\n';
			match = xstrndup(line, n + 1);
		}
		p = nl ? nl + 1 : end;
	}
	free(line);
	return match;
}
