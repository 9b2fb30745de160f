/* Unit tests: a terminal's emulator thread (src/term/termemu.c): snapshots after catching up,
 * watches, the mount's caps, and an emulator whose libvterm call later returns (linked with
 * --wrap=vterm_input_write, which hangs on "\x01HANG"): it is given up on, its screen stays,
 * and letting it go does not wait for it. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <vterm.h>

#include "check.h"
#include "rx.h"
#include "termemu.h"

size_t __real_vterm_input_write(VTerm *vt, const char *bytes, size_t len);
size_t __wrap_vterm_input_write(VTerm *vt, const char *bytes, size_t len);

size_t __wrap_vterm_input_write(VTerm *vt, const char *bytes, size_t len)
{
	if (memmem(bytes, len, "\x01HANG", 5))
		for (;;)
			pause();
	return __real_vterm_input_write(vt, bytes, len);
}

static const struct termemu_limits lim = {.max = 2, .cells = 3000, .stuck_ms = 300};

static double seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool starts_with(struct termemu *e, const char *text, bool *broken)
{
	struct termsnap *s = termemu_snapshot(e, 2000, broken);
	bool yes = !strncmp(s->text, text, strlen(text));

	termsnap_unref(s);
	return yes;
}

/* The watch's line once it has one, waiting up to 2 s. */
static char *watch_line(struct termemu_watch *w, bool *final)
{
	for (int i = 0; i < 200; i++) {
		char *line = termemu_watch_result(w, final);

		if (line || *final)
			return line;
		usleep(10000);
	}
	return NULL;
}

static void test_caps(struct termemu **e1, struct termemu **e2)
{
	struct termemu *e3;

	CHECK(termemu_new(24, 80, &lim, e1) == 0);
	CHECK(termemu_new(10, 10, &lim, e2) == 0);
	CHECK(termemu_new(1, 1, &lim, &e3) == -ENOSPC && !e3); /* max 2 */
	CHECK(termemu_resize(*e2, 30, 30, &lim) == 0);	       /* 1920 + 900 cells */
	CHECK(termemu_resize(*e2, 40, 40, &lim) == -ENOSPC);   /* 1920 + 1600 */
}

static void test_snapshot_and_watch(struct termemu *e)
{
	struct termemu_watch *w, *later;
	struct rx *rx;
	bool broken, final;
	char *line;
	struct termsnap *s;

	termemu_push(e, "hello\r\n", 7);
	CHECK(starts_with(e, "hello\n", &broken) && !broken);
	CHECK(rx_compile("^hel+o$", 7, &rx) == 0);
	w = termemu_watch_add(e, rx);
	termemu_watch_scan(w);
	line = termemu_watch_result(w, &final);
	CHECK(line && !strcmp(line, "hello\n"));
	free(line);
	termemu_watch_remove(w);
	CHECK(rx_compile("world", 5, &rx) == 0);
	later = termemu_watch_add(e, rx);
	/* matched on the emulator's thread once there is a new screen */
	CHECK(rx_compile("^world$", 7, &rx) == 0);
	w = termemu_watch_add(e, rx);
	termemu_push(e, "world\r\n", 7);
	line = watch_line(w, &final);
	CHECK(line && !strcmp(line, "world\n"));
	free(line);
	termemu_watch_remove(w);
	line = watch_line(later, &final);
	CHECK(line && !strcmp(line, "world\n")); /* "world" is in "world" too */
	free(line);
	termemu_watch_remove(later);
	CHECK(rx_compile("^nothing$", 9, &rx) == 0);
	w = termemu_watch_add(e, rx);
	line = watch_line(w, &final);
	CHECK(!line && final); /* all pushed is on the screen it saw */
	termemu_watch_remove(w);
	CHECK(termemu_resize(e, 5, 30, &lim) == 0);
	s = termemu_snapshot(e, 2000, &broken);
	CHECK(s->rows == 5 && s->cols == 30);
	termsnap_unref(s);
}

static void test_stuck(struct termemu *e)
{
	struct termemu_watch *w;
	struct rx *rx;
	bool broken, final;
	double t0;
	char *line;

	CHECK(termemu_room(e) == TERMEMU_QUEUE_SOFT);
	termemu_push(e, "\x01HANG", 5);
	usleep(100000);
	CHECK(termemu_room(e) == TERMEMU_QUEUE_SOFT); /* busy, not given up on yet */
	usleep(400000);
	CHECK(termemu_room(e) == SIZE_MAX); /* given up on: the reader need not wait */
	termemu_push(e, "more\r\n", 6);	    /* dropped */
	CHECK(starts_with(e, "hello\nworld\n", &broken) && broken);
	CHECK(rx_compile("more", 4, &rx) == 0);
	w = termemu_watch_add(e, rx);
	line = termemu_watch_result(w, &final);
	CHECK(!line && final);
	termemu_watch_remove(w);
	t0 = seconds();
	termemu_release(e);
	CHECK(seconds() - t0 < 0.1);
}

int main(void)
{
	struct termemu *e1, *e2, *e3;
	int rc = -1;

	test_caps(&e1, &e2);
	test_snapshot_and_watch(e1);
	test_stuck(e1);
	/* the other one ends when let go, and gives its room back; the stuck one does not */
	termemu_release(e2);
	for (int i = 0; i < 200 && rc != 0; i++) {
		rc = termemu_new(24, 80, &lim, &e3);
		usleep(10000);
	}
	CHECK(rc == 0);
	CHECK(termemu_new(1, 1, &lim, &e2) == -ENOSPC);
	termemu_release(e3);
	return check_done();
}
