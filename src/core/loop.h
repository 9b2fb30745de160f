/* The core's event loop: one thread that watches the shells' pipes and the launcher socket,
 * runs deferred calls and wakes parked waiters. Also owns the core lock. */
#ifndef SBX_LOOP_H
#define SBX_LOOP_H

#include <stdbool.h>
#include <stdint.h>

struct loop_fd;
/* Called on the loop thread with the core lock held. */
typedef void (*loop_fd_cb)(struct loop_fd *lf, uint32_t events, void *arg);

int loop_init(void);
int loop_start(void);
void loop_stop(void);

void core_lock(void);
void core_unlock(void);

/* Core lock held for add/del. A deleted watcher never fires again, even later in a batch. */
struct loop_fd *loop_add_fd(int fd, uint32_t events, loop_fd_cb cb, void *arg);
void loop_mod_fd(struct loop_fd *lf, uint32_t events);
void loop_del_fd(struct loop_fd *lf);

/* One-shot timers. Arm and cancel with the core lock held; fn runs on the loop thread with the
 * core lock held. */
struct loop_timer {
	uint64_t deadline_ns; /* CLOCK_MONOTONIC */
	void (*fn)(struct loop_timer *t);
	bool armed;
	struct loop_timer *next;
};

void loop_timer_arm(struct loop_timer *t, uint64_t ms);
void loop_timer_cancel(struct loop_timer *t);
uint64_t loop_now_ns(void);

/* Any thread, no lock needed: fn(arg) runs on the loop thread without the core lock. */
void loop_defer(void (*fn)(void *), void *arg);
/* Any thread, no lock needed: fn(arg) runs on the loop thread without the core lock, after the
 * wake hook has run once more: what the sandbox did before this call is visible by then. */
void loop_after_sync(void (*fn)(void *), void *arg);
/* Whether the loop thread runs and will run what loop_after_sync queues. */
bool loop_running(void);
/* Whether the caller is the loop thread. */
bool loop_on_thread(void);
/* Any thread: make the loop look at its ready list. */
void loop_poke(void);
/* Called on the loop thread, core lock held, when the signalfd reports SIGCHLD. */
void loop_set_sigchld(void (*fn)(void));
/* Called on the loop thread without the core lock each time the loop wakes, before it handles
 * what woke it (a shell's report, a SIGCHLD), and before the calls queued by loop_after_sync:
 * the layer above catches up there with what must be visible before a command's end is
 * published. It may block on the kernel, not on the core. */
void loop_set_wake_hook(void (*fn)(void));

#endif
