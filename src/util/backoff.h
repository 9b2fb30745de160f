/* When to start again something that keeps dying (the launcher): at once after a stable run,
 * else after a delay that starts at BACKOFF_FIRST_MS and doubles up to BACKOFF_MAX_MS, and
 * whether a death starts a new streak (the one worth a log line). The caller gives the clock. */
#ifndef SBX_BACKOFF_H
#define SBX_BACKOFF_H

#include <stdbool.h>
#include <stdint.h>

#define BACKOFF_FIRST_MS  50
#define BACKOFF_MAX_MS	  5000
#define BACKOFF_STABLE_MS 10000

struct backoff {
	uint64_t started_ns; /* of the current run */
	bool up;	     /* it said it was ready during the current run */
	unsigned streak;     /* deaths in a row that were failures, the first death included */
};

void backoff_started(struct backoff *b, uint64_t now_ns);
void backoff_up(struct backoff *b);
/* A death at now_ns: the delay before the next start, in ms; *new_streak when it is the first
 * death after a stable run (or ever). A run is a failure if it never came up, or died within
 * BACKOFF_STABLE_MS of its start. */
uint64_t backoff_died(struct backoff *b, uint64_t now_ns, bool *new_streak);
/* It has failed to start more than once in a row, and is not up. */
bool backoff_failing(const struct backoff *b);

#endif
