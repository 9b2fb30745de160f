/* Allocation wrappers that never return NULL: running out of memory is fatal for the daemon. */
#ifndef SBX_XMALLOC_H
#define SBX_XMALLOC_H

#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
void *xmemdup(const void *p, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

#endif
