/* A terminal's emulator, off the core loop thread: a thread of its own takes the program's
 * output from a bounded queue, feeds it to the screen (termscreen.h) in small chunks, and hands
 * back snapshots of the screen (termsnap.h) under its lock, at most every TERMEMU_PUBLISH_MS
 * while busy and each time it has caught up. The same thread matches the wait patterns
 * (watches) of the terminal against each new snapshot.
 *
 * Whatever the emulator does, the rest of the daemon does not wait for it: pushing output and
 * reading a snapshot only take its lock, which its thread never holds while it emulates,
 * renders or matches; a reader that waits for it to catch up waits a bounded time; and a call
 * into libvterm (a feed, a resize, a render) that has not returned after a while
 * (TERMEMU_STUCK_MS) gets the emulator marked broken: its screen stays as it was, its output
 * is dropped, and its thread, never joined, ends on its own if the call ever returns.
 *
 * The mount's emulators and their cells are capped (struct termemu_limits): an emulator let go
 * in the middle of a call into libvterm stays counted until its thread ends, so a stuck one
 * for ever. */
#ifndef SBX_TERMEMU_H
#define SBX_TERMEMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rx.h"
#include "termsnap.h"

/* Output queued and not emulated yet past which termemu_room says 0 (the master's reader
 * waits), and past which termemu_push drops it: room for what a pty still holds when its
 * program ends. */
#define TERMEMU_QUEUE_SOFT (64u << 10)
#define TERMEMU_QUEUE_MAX  (256u << 10)
/* A feed is a few hundred bytes; the slowest take well under a second on a 1000x1000
 * screen. One that has not returned after this long never will: the daemon's stuck_ms. */
#define TERMEMU_STUCK_MS   10000u
#define TERMEMU_PUBLISH_MS 50u

struct termemu;
struct termemu_watch;

struct termemu_limits {
	uint64_t max;	   /* emulators alive in the mount */
	uint64_t cells;	   /* rows x cols of all of them together */
	unsigned stuck_ms; /* a call into libvterm running longer gets it given up on */
};

/* 0, or -ENOSPC past the limits (nothing made), -EAGAIN if no thread could be started. */
int termemu_new(unsigned rows, unsigned cols, const struct termemu_limits *lim,
		struct termemu **out);
/* The owner lets go: its thread stops after the call it is in (if it ever returns). Never
 * waits. */
void termemu_release(struct termemu *e);
/* Its room in the mount's caps is given back now (an rmdir), not when the last reference goes
 * (after its program's end is reported), unless a call into libvterm is under way. */
void termemu_give_back(struct termemu *e);
/* Readable when a snapshot was published, a watch matched, or the queue has room again;
 * termemu_clear_fd empties it. */
int termemu_fd(const struct termemu *e);
void termemu_clear_fd(struct termemu *e);
/* Bytes termemu_push takes before it is past TERMEMU_QUEUE_SOFT; SIZE_MAX once broken (all is
 * dropped then, and the reader need not wait). */
size_t termemu_room(struct termemu *e);
void termemu_push(struct termemu *e, const char *data, size_t len);
/* -ENOSPC past the limits (nothing changes). */
int termemu_resize(struct termemu *e, unsigned rows, unsigned cols,
		   const struct termemu_limits *lim);
/* The latest snapshot, once the emulator has taken in all that was pushed before the call,
 * or after timeout_ms; *broken if it was given up on. Caller unrefs. */
struct termsnap *termemu_snapshot(struct termemu *e, unsigned timeout_ms, bool *broken);

/* A wait pattern on the screen: matched by the emulator's thread against each new snapshot
 * until one matches. Takes rx. */
struct termemu_watch *termemu_watch_add(struct termemu *e, struct rx *rx);
void termemu_watch_remove(struct termemu_watch *w);
/* Matches the latest snapshot on the calling thread (never the core loop's). */
void termemu_watch_scan(struct termemu_watch *w);
/* The line that matched (caller frees), or NULL; *final whether nothing will change any more
 * once the program has ended: all it pushed is on the snapshot the watch last matched, or the
 * emulator is broken. */
char *termemu_watch_result(struct termemu_watch *w, bool *final);

#endif
