/* Refused system calls in the journal (refused_calls.h). */
#include "refused_calls.h"

#include <stdlib.h>

#include "journal.h"
#include "loop.h"
#include "session.h"
#include "sysnotify.h"

static uint64_t window_ns; /* start of the second being counted */
static unsigned in_window, over;
static struct loop_timer flush;

static void say_over(struct loop_timer *t)
{
	struct jrec e;

	(void)t;
	if (!over)
		return;
	jrec_begin(&e, "syscall.refused.more", NULL);
	jrec_int(&e, "count", over);
	jrec_commit(&e);
	over = 0;
}

/* Loop thread, core lock held. */
static void note(const struct sys_refusal *r)
{
	uint64_t now = loop_now_ns();
	const char *sid = NULL;
	struct jrec e;

	if (now - window_ns >= 1000000000ull) {
		say_over(NULL);
		window_ns = now;
		in_window = 0;
	}
	if (++in_window > REFUSED_PER_S) {
		if (!over++)
			loop_timer_arm(&flush, 1000);
		return;
	}
	if (r->group[0] == 's')
		sid = session_id_by_serial_locked(strtoull(r->group + 1, NULL, 10));
	jrec_begin(&e, "syscall.refused", sid);
	jrec_str(&e, "call", r->call);
	jrec_int(&e, "pid", r->pid);
	jrec_str(&e, "comm", r->comm);
	if (!sid && r->group[0])
		jrec_str(&e, "group", r->group);
	jrec_str(&e, "errno", "EPERM");
	jrec_commit(&e);
}

void refused_calls_init(void)
{
	flush.fn = say_over;
	sysnotify_set_report(note);
}

void refused_calls_stop(void)
{
	loop_timer_cancel(&flush);
	say_over(NULL);
	sysnotify_stop();
}
