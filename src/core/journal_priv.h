/* What journal.c asks of its files (journal_store.c); every call with the journal's lock held. */
#ifndef SBX_JOURNAL_PRIV_H
#define SBX_JOURNAL_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Opens dir's segments (kept under max bytes in all); *last_seq: the last line's number. */
int jstore_open(const char *dir, uint64_t max, uint64_t *last_seq, char *err, size_t errlen);
void jstore_close(void);
bool jstore_is_open(void);
uint64_t jstore_end(void);
/* Appends one whole line, or nothing: 0 or -errno. */
int jstore_append(const char *line, size_t len);
void jstore_read(uint64_t *off, char *buf, size_t size, size_t *n);

#endif
