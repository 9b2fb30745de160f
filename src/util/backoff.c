/* Restart delays (see backoff.h). */
#include "backoff.h"

void backoff_started(struct backoff *b, uint64_t now_ns)
{
	b->started_ns = now_ns;
	b->up = false;
}

void backoff_up(struct backoff *b)
{
	b->up = true;
}

uint64_t backoff_died(struct backoff *b, uint64_t now_ns, bool *new_streak)
{
	bool stable = b->up && now_ns - b->started_ns >= BACKOFF_STABLE_MS * 1000000ull;
	uint64_t ms = BACKOFF_MAX_MS;

	if (stable)
		b->streak = 0;
	*new_streak = b->streak == 0;
	if (b->streak == 0)
		ms = 0;
	else if (b->streak < 16 && ((uint64_t)BACKOFF_FIRST_MS << (b->streak - 1)) < BACKOFF_MAX_MS)
		ms = (uint64_t)BACKOFF_FIRST_MS << (b->streak - 1);
	b->streak++;
	return ms;
}

bool backoff_failing(const struct backoff *b)
{
	return !b->up && b->streak > 1;
}
