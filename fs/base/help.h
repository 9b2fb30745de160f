/* The mount's README: a line per file of every part, its path and its one-line help. Each part
 * adds its own from its rows (fs/root.c asks them all), so a file cannot be added without its
 * help; the lines come out in the order of their paths, as the tree is. */
#ifndef SBX_HELP_H
#define SBX_HELP_H

#include <stdbool.h>
#include <stddef.h>

struct help_line {
	char *path;
	const char *help;
};

struct help {
	struct help_line *v;
	size_t n;
};

/* Adds the line of dir followed by name, and a '/' if it names a directory. */
void help_add(struct help *h, const char *dir, const char *name, bool is_dir, const char *help);
/* head, the lines by path, then tail: the README's text (caller frees). Frees the lines. */
char *help_render(struct help *h, const char *head, const char *tail);

#endif
