/* The hook behind changes_note (changes.h): one callback, set at start. */
#include "changes.h"

#include <stddef.h>

static void (*listener)(void);

void changes_note(void)
{
	void (*fn)(void) = __atomic_load_n(&listener, __ATOMIC_ACQUIRE);

	if (fn)
		fn();
}

void changes_set(void (*fn)(void))
{
	__atomic_store_n(&listener, fn, __ATOMIC_RELEASE);
}
