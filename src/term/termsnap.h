/* A terminal's screen as the emulator last rendered it: immutable once made, shared by
 * reference between the emulator's thread that makes it and the readers of screen and wait. */
#ifndef SBX_TERMSNAP_H
#define SBX_TERMSNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rx.h"

/* The bytes of a line a wait pattern is matched against; the rest of a longer line is not. */
#define TERMSNAP_MATCH_MAX 1024u

struct termsnap {
	int refs;
	uint64_t gen; /* set by its publisher: later snapshots have larger ones */
	unsigned rows, cols, cursor_row, cursor_col;
	/* Blanks of the cursor's row between its last character and the cursor: a prompt's
	 * trailing blank is there. */
	size_t pad;
	size_t len;
	char text[]; /* rows lines of UTF-8, each ended by '\n', without their trailing blanks */
};

/* rows empty lines, the cursor at the top left. */
struct termsnap *termsnap_blank(unsigned rows, unsigned cols);
void termsnap_ref(struct termsnap *s);
void termsnap_unref(struct termsnap *s);
/* The text of the screen file: the snapshot's, under notice (a line, if not NULL). Caller
 * frees. */
char *termsnap_text(const struct termsnap *s, const char *notice, size_t *len);
/* The first line from the top that rx matches, the cursor's row with its blanks up to the
 * cursor, each line cut at TERMSNAP_MATCH_MAX bytes: that line (as matched, with a newline),
 * or NULL. Caller frees. */
char *termsnap_match(const struct termsnap *s, const struct rx *rx);

#endif
