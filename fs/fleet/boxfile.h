/* The files of the fleet's tree that are opened and read: status, clone's answer, and a
 * sandbox's keep_alive and config, which are written too. */
#ifndef SBX_BOXFILE_H
#define SBX_BOXFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* An open file: what its reads give (taken at its open), and config's writes until its close. */
struct handle {
	char *text;
	size_t len;
	char *buf; /* config: the new text, applied at the close if written */
	size_t buflen;
	bool written;
};

/* A handle whose reads give text (taken over). */
struct handle *handle_new(char *text);
void handle_free(struct handle *h);
/* The open of file ino (status, keep_alive or config; not clone): 0 with *h, or -errno. A
 * config open for writing starts from its text, or from nothing with trunc. */
int boxfile_open(uint64_t ino, bool write, bool trunc, struct handle **h);
/* A write: how much was taken, or -errno. */
ssize_t boxfile_write(struct handle *h, uint64_t ino, const char *buf, size_t size, off_t off);
/* A truncation to 0 of the open file (O_TRUNC). 0 or -EPERM. */
int boxfile_truncate(struct handle *h, uint64_t ino);
/* The close: a written config is applied. 1 if it was (its sandbox may be on its way up with
 * it), 0 if there was nothing to apply, or -errno. */
int boxfile_flush(struct handle *h, uint64_t ino);
/* The size stat gives of a file of the tree (config's is its text's; the others 0). */
off_t boxfile_size(uint64_t ino);

#endif
