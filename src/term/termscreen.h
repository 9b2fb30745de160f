/* A terminal's screen: a libvterm emulator fed with what the program writes, rendered as plain
 * text. Not locked: its owner's lock covers it. */
#ifndef SBX_TERMSCREEN_H
#define SBX_TERMSCREEN_H

#include <stddef.h>

struct termscreen;

struct termscreen *termscreen_new(unsigned rows, unsigned cols);
void termscreen_free(struct termscreen *ts);
void termscreen_feed(struct termscreen *ts, const char *data, size_t len);
void termscreen_resize(struct termscreen *ts, unsigned rows, unsigned cols);
/* 0-based cursor position. */
void termscreen_cursor(struct termscreen *ts, unsigned *row, unsigned *col);
/* rows lines of UTF-8, each without its trailing blanks; caller frees, *len its length. */
char *termscreen_text(struct termscreen *ts, size_t *len);

#endif
