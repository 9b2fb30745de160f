/* Sleeping once idle (idle.h). A timer on the loop fires every quarter of sleep_after (a second
 * at most) and defers the check to the loop thread without the core lock, which busy.h's checks
 * take. A request, something running or an open connection restarts the idle time; once it
 * reaches sleep_after, keep_alive and the owner's held() (a scan of /proc) are asked, and either
 * restarts it too. */
#include "idle.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "busy.h"
#include "expose.h"
#include "log.h"
#include "loop.h"

static struct loop_timer tick;
static struct idle_cbs cbs;
static atomic_bool on, touched;
static uint64_t after_ns, period_ms, idle_since; /* the loop thread's */
/* Not freed: a check under way when idle_stop runs still reads them. */
static char slept_path[PATH_MAX], keep_path[PATH_MAX];

/* On every request: loads only, unless sleep_after is on and no request came since the last
 * check, so that the request threads do not write one shared line each time. */
void idle_touch(void)
{
	if (atomic_load_explicit(&on, memory_order_relaxed) &&
	    !atomic_load_explicit(&touched, memory_order_relaxed))
		atomic_store_explicit(&touched, true, memory_order_relaxed);
}

static bool connections_open(void)
{
	struct expose_info *v;
	size_t n = expose_list(&v);
	bool open = false;

	for (size_t i = 0; i < n; i++)
		open |= v[i].active > 0;
	expose_list_free(v, n);
	return open;
}

/* The marker a fleet reads once the daemon ended: it slept, so it waits to be woken. */
static void fall_asleep(void)
{
	int fd = open(slept_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	char text[32];
	int len = snprintf(text, sizeof(text), "%lld\n", (long long)time(NULL));

	if (fd < 0 || write(fd, text, (size_t)len) != len) {
		log_warn("%s: staying awake", slept_path);
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	log_info("idle for %llu s: sleeping", (unsigned long long)(after_ns / 1000000000u));
	atomic_store(&on, false);
	cbs.sleep();
}

static void check(void *arg)
{
	uint64_t now = loop_now_ns();

	(void)arg;
	if (!atomic_load(&on))
		return;
	if (atomic_exchange(&touched, false) || sandbox_busy(false) || connections_open()) {
		idle_since = now;
	} else if (now - idle_since >= after_ns) {
		if (access(keep_path, F_OK) == 0 || cbs.held()) {
			idle_since = now;
		} else {
			fall_asleep();
			if (!atomic_load(&on))
				return;
		}
	}
	core_lock();
	if (atomic_load(&on))
		loop_timer_arm(&tick, period_ms);
	core_unlock();
}

static void on_tick(struct loop_timer *t)
{
	(void)t;
	loop_defer(check, NULL);
}

void idle_start(unsigned sleep_after_s, const char *state_dir, const struct idle_cbs *c)
{
	snprintf(slept_path, sizeof(slept_path), "%s/slept", state_dir);
	snprintf(keep_path, sizeof(keep_path), "%s/keep_alive", state_dir);
	if (unlink(slept_path) < 0 && errno != ENOENT)
		log_warn("%s", slept_path);
	if (sleep_after_s == 0)
		return;
	cbs = *c;
	after_ns = (uint64_t)sleep_after_s * 1000000000u;
	period_ms = sleep_after_s >= 4 ? 1000 : sleep_after_s * 250u;
	idle_since = loop_now_ns();
	tick.fn = on_tick;
	atomic_store(&on, true);
	core_lock();
	loop_timer_arm(&tick, period_ms);
	core_unlock();
}

void idle_stop(void)
{
	if (!atomic_exchange(&on, false))
		return;
	core_lock();
	loop_timer_cancel(&tick);
	core_unlock();
}
