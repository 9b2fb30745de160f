/* Unit tests: durations between clock readings (src/util/elapsed.c), the later reading's
 * nanoseconds below the earlier's first. */
#include "check.h"
#include "elapsed.h"

int main(void)
{
	struct timespec t0 = {.tv_sec = 100, .tv_nsec = 900000000};

	CHECK(elapsed_ms(&t0, &(struct timespec){101, 100000000}) == 200);
	CHECK(elapsed_ms(&t0, &(struct timespec){100, 900999999}) == 0);
	CHECK(elapsed_ms(&t0, &(struct timespec){100, 901000000}) == 1);
	CHECK(elapsed_ms(&t0, &(struct timespec){5100, 0}) == 4999100);
	CHECK(elapsed_ms(&t0, &(struct timespec){100, 0}) == 0); /* earlier: none */
	CHECK(elapsed_ms(&t0, &(struct timespec){99, 999999999}) == 0);
	CHECK(elapsed_ms(&t0, &t0) == 0);
	return check_done();
}
