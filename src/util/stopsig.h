/* The stop signals (SIGTERM, SIGINT, SIGHUP) of a FUSE daemon: its loop waits in the main
 * thread, and a signal taken by another thread (one blocked in a read, an event loop) would set
 * the session's exit flag without waking it. */
#ifndef SBX_STOPSIG_H
#define SBX_STOPSIG_H

/* From the main thread, after fuse_set_signal_handlers: each stop signal not ignored calls
 * stop (async-signal-safe: fuse_session_exit) and, taken by another thread, is passed on to
 * the main thread, whose wait it interrupts. */
void stopsig_install(void (*stop)(void));

#endif
