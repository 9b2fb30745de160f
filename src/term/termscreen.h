/* A terminal's screen: a libvterm emulator fed with what the program writes, through the filter
 * that keeps libvterm's faults out of reach (termfilter.h), and rendered as plain text
 * snapshots. Used by one thread at a time (the terminal's emulator thread, termemu.h): not
 * locked. */
#ifndef SBX_TERMSCREEN_H
#define SBX_TERMSCREEN_H

#include <stddef.h>

#include "termsnap.h"

/* libvterm 0.1.4 writes a wide character past the end of a row of one column. */
#define TERMSCREEN_COLS_MIN 2

struct termscreen;

/* cols at least TERMSCREEN_COLS_MIN, here and for termscreen_resize. */
struct termscreen *termscreen_new(unsigned rows, unsigned cols);
void termscreen_free(struct termscreen *ts);
void termscreen_feed(struct termscreen *ts, const char *data, size_t len);
void termscreen_resize(struct termscreen *ts, unsigned rows, unsigned cols);
/* The screen now; its gen is left 0. */
struct termsnap *termscreen_render(struct termscreen *ts);

#endif
