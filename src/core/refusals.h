/* The refusals log: a line for every write, mkdir or other request sbxfs refused with a reason
 * a bare errno cannot give ("allow HOST privat": which word), so that a user finds why in one
 * place, the mount's `errors` file. Each line is "TIME PATH ERRNO REASON" (PATH the file as in
 * the mount, REASON the rest of the line; both %HH-escaped, escape.h: they may quote what a
 * user or a sandboxed process wrote). The last REFUSALS_MAX bytes are kept, addressed by
 * offsets since the start, so the file reads like a log on disk and `tail -f` follows it. */
#ifndef SBX_REFUSALS_H
#define SBX_REFUSALS_H

#include <stddef.h>
#include <stdint.h>

#define REFUSALS_MAX (64u << 10)

/* Adds the line of a refusal of path with err (a positive errno): why, printf-style. */
void refusal_note(const char *path, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Copies what is held from *off on (moved up to the oldest byte held) into buf: *n bytes. */
void refusals_read(uint64_t *off, char *buf, size_t size, size_t *n);
/* As refusal_note, for sessions/SID/DIR/NAME. */
void refusal_note_in(const char *sid, const char *dir, const char *name, int err,
		     const char *why);
/* The offset of the log's end. */
uint64_t refusals_end(void);

#endif
