/* A minimal assertion helper for the unit tests: counts checks, prints failures with their
 * line, and ends with the plain "N passed, N failed" line. */
#ifndef SBX_CHECK_H
#define SBX_CHECK_H

#include <stdbool.h>

extern int check_passed, check_failed;

void check_at(bool ok, const char *expr, const char *file, int line);
int check_done(void);

#define CHECK(e) check_at((e), #e, __FILE__, __LINE__)

#endif
