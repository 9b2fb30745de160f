/* What termfs.c (names, attributes, directories) and termfile.c (open files) share: a row per
 * kind of terms/'s inodes, in the table termfile.c holds. */
#ifndef SBX_TERMKIND_H
#define SBX_TERMKIND_H

#include <sys/stat.h>

#include "ino.h"

struct session;

struct term_kind {
	const char *name;
	mode_t mode; /* 0: not a kind of terms/ */
};

/* Indexed by kind; a terminal's directory holds the regular files. */
extern const struct term_kind term_kinds[K_MAX];

/* Size of a terminal's file now (what a read from 0 would give, or the output's end). */
void termfile_stat(fuse_ino_t ino, struct session *s, struct stat *st);

#endif
