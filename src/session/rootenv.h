/* The sandbox-wide environment (the mount's root `env`): variables every session starts with,
 * and that reach every existing session's next command too, except the names a session set
 * itself through its own `env` (session values win). Every function takes the core lock itself,
 * except rootenv_seed. */
#ifndef SBX_ROOTENV_H
#define SBX_ROOTENV_H

#include <stddef.h>

#include "envlist.h"

/* The root set as NAME=VALUE lines, in the form of a session's env; caller frees. */
char *rootenv_read(size_t *len);
/* Edit lines as a session's env takes them: -EINVAL for a bad line, -EFBIG past the env
 * bounds (rootenv_check), and then nothing applied. */
int rootenv_write(const char *buf, size_t len);
/* -EFBIG if the edits would set a variable over [session] env_value_max, or take the env a new
 * session starts with over env_max (and further from it). */
int rootenv_check(const struct envedits *ed);
/* Core lock held: puts the root set into a new session's environment. */
void rootenv_seed(struct envlist *env);
/* Frees the root set (unmount). */
void rootenv_free(void);

#endif
