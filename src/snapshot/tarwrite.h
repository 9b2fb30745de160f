/* A snapshot's tree as a tar stream, made as it is read: a walk that stops wherever a read
 * ends and goes on at the next, so no archive is ever written whole anywhere. */
#ifndef SBX_TARWRITE_H
#define SBX_TARWRITE_H

#include <stddef.h>
#include <sys/types.h>

struct tar_writer;

/* The writer of the tree of the directory tree (an fd it takes over). */
struct tar_writer *tarw_new(int tree);
/* The next bytes of the archive, up to size, into buf: how many (0 at its end), or -errno. */
ssize_t tarw_read(struct tar_writer *w, char *buf, size_t size);
void tarw_free(struct tar_writer *w);

#endif
