/* Unit tests: a terminal's output ring keeps the last bytes at their absolute offsets. */
#include <string.h>

#include "check.h"
#include "termring.h"

static void test_fill_and_wrap(void)
{
	struct termring r;
	char out[16];

	termring_init(&r, 8);
	termring_put(&r, "abcde", 5);
	CHECK(termring_oldest(&r) == 0 && r.end == 5);
	CHECK(termring_get(&r, 1, out, sizeof(out)) == 4 && !memcmp(out, "bcde", 4));
	termring_put(&r, "fghij", 5); /* wraps: "cdefghij" held, from offset 2 */
	CHECK(termring_oldest(&r) == 2 && r.end == 10);
	CHECK(termring_get(&r, 0, out, sizeof(out)) == 8 && !memcmp(out, "cdefghij", 8));
	CHECK(termring_get(&r, 7, out, 2) == 2 && !memcmp(out, "hi", 2));
	CHECK(termring_get(&r, 10, out, sizeof(out)) == 0);
	termring_put(&r, "0123456789AB", 12); /* more than it holds at once */
	CHECK(r.end == 22 && termring_oldest(&r) == 14);
	CHECK(termring_get(&r, 3, out, sizeof(out)) == 8 && !memcmp(out, "456789AB", 8));
	termring_free(&r);
}

int main(void)
{
	test_fill_and_wrap();
	return check_done();
}
