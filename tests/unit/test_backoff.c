/* Unit tests: restart delays (backoff.h): at once after a stable run, then 50 ms doubling to a
 * 5 s cap while starts fail, one new streak per stable run. */
#include "backoff.h"
#include "check.h"

#define MS 1000000ull

int main(void)
{
	struct backoff b = {0};
	uint64_t now = 1000 * MS, want = BACKOFF_FIRST_MS;
	bool fresh;

	backoff_started(&b, now);
	backoff_up(&b);
	now += 60000 * MS;
	CHECK(backoff_died(&b, now, &fresh) == 0 && fresh);
	CHECK(!backoff_failing(&b));
	/* starts that never come up: 50, 100, 200 ... 3200, then 5000 for ever */
	for (int i = 0; i < 12; i++) {
		backoff_started(&b, now);
		CHECK(backoff_died(&b, now + MS, &fresh) == want && !fresh);
		CHECK(backoff_failing(&b));
		want = want * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : want * 2;
	}
	for (int i = 0; i < 100; i++)
		CHECK(backoff_died(&b, now, &fresh) == BACKOFF_MAX_MS && !fresh);
	/* up, but dead again within the stable time: still the same streak */
	backoff_started(&b, now);
	backoff_up(&b);
	CHECK(!backoff_failing(&b));
	CHECK(backoff_died(&b, now + (BACKOFF_STABLE_MS - 1) * MS, &fresh) == BACKOFF_MAX_MS &&
	      !fresh);
	/* a stable run ends the streak: the next death restarts at once and is logged */
	backoff_started(&b, now);
	backoff_up(&b);
	CHECK(backoff_died(&b, now + BACKOFF_STABLE_MS * MS, &fresh) == 0 && fresh);
	backoff_started(&b, now);
	CHECK(backoff_died(&b, now, &fresh) == BACKOFF_FIRST_MS && !fresh);
	return check_done();
}
