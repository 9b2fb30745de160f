/* The unit tests' assertion counter (see check.h). */
#include "check.h"

#include <stdio.h>

int check_passed, check_failed;

void check_at(bool ok, const char *expr, const char *file, int line)
{
	if (ok) {
		check_passed++;
		return;
	}
	check_failed++;
	fprintf(stderr, "%s:%d: check failed: %s\n", file, line, expr);
}

int check_done(void)
{
	printf("%d passed, %d failed\n", check_passed, check_failed);
	return check_failed ? 1 : 0;
}
