/* The mount's README, built a line per file (help.h). */
#include "help.h"

#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

/* The help column: paths longer than it get their help on the next line. */
#define PATH_WIDTH 32

void help_add(struct help *h, const char *dir, const char *name, bool is_dir, const char *help)
{
	h->v = xrealloc(h->v, (h->n + 1) * sizeof(*h->v));
	h->v[h->n++] = (struct help_line){xasprintf("%s%s%s", dir, name, is_dir ? "/" : ""), help};
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct help_line *)a)->path, ((const struct help_line *)b)->path);
}

char *help_render(struct help *h, const char *head, const char *tail)
{
	char *text = xstrdup(head), *next;

	qsort(h->v, h->n, sizeof(*h->v), by_path);
	for (size_t i = 0; i < h->n; i++) {
		const char *p = h->v[i].path;
		int wide = strlen(p) >= PATH_WIDTH;

		next = xasprintf("%s%-*s%s%*s%s\n", text, wide ? 0 : PATH_WIDTH, p,
				 wide ? "\n" : "", wide ? PATH_WIDTH : 0, "", h->v[i].help);
		free(text);
		text = next;
		free(h->v[i].path);
	}
	free(h->v);
	*h = (struct help){0};
	next = xasprintf("%s%s", text, tail);
	free(text);
	return next;
}
