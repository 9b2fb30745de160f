/* A run's result: one JSON object in the SDK's ExecResult shape (plus sbxfs's own fields),
 * rendered from the run once it is done. */
#ifndef SBX_RESULT_H
#define SBX_RESULT_H

#include <stddef.h>

#include "run.h"

/* Bytes of each stream (and of the command) a result embeds; past that the field is cut and
 * its "...Truncated" is true. */
#define RESULT_STREAM_MAX (1u << 20)

/* Renders the result of r (done) of session sid into *text (caller frees), a newline after the
 * object. Takes the core lock; -errno if a spool cannot be read back. */
int result_render(struct run *r, const char *sid, char **text, size_t *len);

#endif
