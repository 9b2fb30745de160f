/* What journal.c asks of its way to disk (journal_flush.c), and that of its files
 * (journal_store.c; every call with journal_flush.c's store lock held). */
#ifndef SBX_JOURNAL_PRIV_H
#define SBX_JOURNAL_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Opens dir's segments (kept under max bytes in all); *last_seq: the last line's number. */
int jstore_open(const char *dir, uint64_t max, uint64_t *last_seq, char *err, size_t errlen);
void jstore_close(void);
uint64_t jstore_end(void);
/* Appends one whole line, or nothing: 0 or -errno. */
int jstore_append(const char *line, size_t len);
void jstore_read(uint64_t *off, char *buf, size_t size, size_t *n);

/* journal_flush.c: the store opened and closed under its lock; the writer thread started
 * (0 or -errno) and stopped once all handed over is written; a line handed over; the end
 * offset of all handed over; reads of the files and of what is still in memory. */
int jflush_open_store(const char *dir, uint64_t max, uint64_t *last_seq, char *err,
		      size_t errlen);
void jflush_close_store(void);
int jflush_start(void);
void jflush_stop(void);
void jflush_put(const char *line, size_t len);
uint64_t jflush_end(void);
void jflush_read(uint64_t *off, char *buf, size_t size, size_t *n);

#endif
