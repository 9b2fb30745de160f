/* Durations between two readings of a clock. */
#ifndef SBX_ELAPSED_H
#define SBX_ELAPSED_H

#include <stdint.h>
#include <time.h>

/* Whole milliseconds from t0 to t, 0 if t is not later. */
uint64_t elapsed_ms(const struct timespec *t0, const struct timespec *t);

#endif
