/* Durations (see elapsed.h). The nanoseconds of the later reading may be below the earlier's: the
 * difference is taken whole and signed before it is divided, never cast to unsigned part by
 * part (which made a duration of 4,294,967 s of a 1 ms connection). */
#include "elapsed.h"

uint64_t elapsed_ms(const struct timespec *t0, const struct timespec *t)
{
	int64_t ns = ((int64_t)t->tv_sec - (int64_t)t0->tv_sec) * 1000000000 +
		     ((int64_t)t->tv_nsec - (int64_t)t0->tv_nsec);

	return ns > 0 ? (uint64_t)ns / 1000000 : 0;
}
