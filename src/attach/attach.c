/* sbxfs attach PATH: the user's terminal on the sandbox terminal PATH. A client of the mount's
 * files, not of the core, so it lives beside main.c as an entry point of the binary. The main
 * thread polls the keys, the signals and the reader's end; a reader thread follows `out`,
 * whose reads block in the daemon. */
#include "attach.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define DETACH_KEY  0x1d /* Ctrl-] */
#define STOP_SIGNAL SIGUSR1

enum ending { END_DETACHED, END_EXITED, END_SIGNALED };

/* One attach per process; static so that a reader that cannot be stopped never outlives it. */
static struct attach {
	int dir, in, out, sig;
	int done[2];   /* the reader writes a byte there when it ends */
	off_t out_pos; /* next byte of out to read */
	bool escape;   /* Ctrl-] typed, the next key decides */
	pthread_t reader;
	bool reader_running;
	atomic_bool stop;
	int reader_rc; /* 0: out ended (the terminal exited), or -errno */
	char last_out; /* the last byte drawn, to end on a fresh line */
	bool utf8;     /* the user's terminal reads UTF-8 */
	struct attach_filter filter; /* out on its way to the user's terminal */
	struct termios saved;
} A = {.dir = -1, .in = -1, .out = -1, .sig = -1, .done = {-1, -1}};

static void usage(FILE *f)
{
	fprintf(f, "usage: sbxfs attach MOUNT/sessions/ID/terms/NAME\n"
		   "\n"
		   "Attaches this terminal to the sandbox terminal NAME of session ID (made if\n"
		   "missing). Ctrl-] d detaches and leaves it running; Ctrl-] Ctrl-] sends one\n"
		   "Ctrl-].\n");
}

static void *reader_main(void *arg)
{
	static char buf[65536], shown[ATTACH_FILTER_OUT_MAX(sizeof(buf))];
	sigset_t stop;
	size_t len;

	(void)arg;
	sigemptyset(&stop);
	sigaddset(&stop, STOP_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &stop, NULL);
	while (!atomic_load(&A.stop)) {
		ssize_t n = pread(A.out, buf, sizeof(buf), A.out_pos);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			A.reader_rc = n < 0 ? -errno : 0;
			break;
		}
		A.out_pos += n;
		if ((len = attach_filter_run(&A.filter, buf, (size_t)n, shown)) == 0)
			continue;
		A.last_out = shown[len - 1];
		if ((A.reader_rc = write_all(STDOUT_FILENO, shown, len)) < 0)
			break;
	}
	write_all(A.done[1], "x", 1);
	return NULL;
}

static void on_stop_signal(int sig)
{
	(void)sig;
}

static int start_reader(void)
{
	struct sigaction sa = {.sa_handler = on_stop_signal}; /* no SA_RESTART: reads give EINTR */
	int rc;

	if (sigaction(STOP_SIGNAL, &sa, NULL) < 0 || pipe2(A.done, O_CLOEXEC) < 0)
		return -errno;
	attach_filter_init(&A.filter, A.utf8);
	if ((rc = pthread_create(&A.reader, NULL, reader_main, NULL)) != 0)
		return -rc;
	A.reader_running = true;
	return 0;
}

/* The reader may be parked in a read of out: signals interrupt it until it notices. A daemon
 * that never answers leaves it behind after a second; the process ends anyway. */
static void stop_reader(void)
{
	struct pollfd p = {.fd = A.done[0], .events = POLLIN};

	if (!A.reader_running)
		return;
	atomic_store(&A.stop, true);
	for (int tries = 0; tries < 20; tries++) {
		pthread_kill(A.reader, STOP_SIGNAL);
		if (poll(&p, 1, 50) > 0) {
			pthread_join(A.reader, NULL);
			A.reader_running = false;
			return;
		}
	}
}

/* Watches the signals that resize or end the attach; blocked first, for every thread. */
static int open_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGWINCH);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGQUIT);
	sigaddset(&set, STOP_SIGNAL);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	sigdelset(&set, STOP_SIGNAL);
	A.sig = signalfd(-1, &set, SFD_CLOEXEC);
	return A.sig < 0 ? -errno : 0;
}

/* Whether the user's terminal reads UTF-8, judged as tmux judges it: inside tmux, or by the
 * locale's name in the environment (the locale need not be installed here to be the
 * terminal's). */
static bool host_utf8(void)
{
	const char *names[] = {"LC_ALL", "LC_CTYPE", "LANG"}, *v = NULL;

	if (getenv("TMUX"))
		return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && (!v || !*v); i++)
		v = getenv(names[i]);
	return v && (strcasestr(v, "UTF-8") || strcasestr(v, "UTF8"));
}

static int send_size(void)
{
	unsigned rows, cols;
	int rc = attach_tty_size(STDIN_FILENO, &rows, &cols);

	return rc < 0 ? rc : attach_term_set_size(A.dir, rows, cols);
}

/* The screen as it is now, and where out goes on from: status is read around the screen
 * until no output came in between (or a busy program never lets it settle). */
static int replay(void)
{
	struct attach_term_status before, after;
	char *screen;
	size_t len;
	int rc;

	if ((rc = attach_term_read_status(A.dir, &after)) < 0)
		return rc;
	for (int tries = 0; tries < 5; tries++) {
		before = after;
		if ((rc = attach_term_read(A.dir, "screen", &screen, &len)) < 0)
			return rc;
		if ((rc = attach_term_read_status(A.dir, &after)) < 0) {
			free(screen);
			return rc;
		}
		if (before.bytes_out == after.bytes_out || tries == 4)
			break;
		free(screen);
	}
	rc = attach_tty_draw_screen(STDOUT_FILENO, screen, len, after.cursor_row, after.cursor_col,
				    A.utf8);
	free(screen);
	A.out_pos = (off_t)after.bytes_out;
	A.last_out = after.cursor_col == 0 ? '\n' : ' ';
	return rc;
}

static int open_files(void)
{
	struct attach_term_status st;
	int rc;

	/* EINVAL: a size the tty does not know (0x0) or the terminal refuses: it keeps its own. */
	if ((rc = send_size()) < 0 && rc != -EINVAL)
		return rc;
	if ((rc = attach_term_read_status(A.dir, &st)) < 0)
		return rc;
	if (!st.started && (rc = attach_term_start(A.dir)) < 0)
		return rc;
	if ((A.in = openat(A.dir, "in", O_WRONLY | O_CLOEXEC)) < 0 ||
	    (A.out = openat(A.dir, "out", O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	return 0;
}

/* Sends the keys to in, except the detach sequence: 1 when it was typed. */
static int forward_keys(const char *keys, size_t n)
{
	char buf[2 * 4096];
	size_t k = 0;
	int rc;

	for (size_t i = 0; i < n; i++) {
		char c = keys[i];

		if (A.escape) {
			A.escape = false;
			if (c == 'd') {
				rc = write_all(A.in, buf, k);
				return rc < 0 ? rc : 1;
			}
			buf[k++] = DETACH_KEY;
			if (c != DETACH_KEY)
				buf[k++] = c;
		} else if (c == DETACH_KEY) {
			A.escape = true;
		} else {
			buf[k++] = c;
		}
	}
	return write_all(A.in, buf, k);
}

static int on_keys(enum ending *end, int *signo)
{
	char keys[4096];
	ssize_t n = read(STDIN_FILENO, keys, sizeof(keys));
	int rc;

	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -errno;
	if (n == 0) { /* the user's terminal went away: as a hangup */
		*signo = SIGHUP;
		*end = END_SIGNALED;
		return 1;
	}
	if ((rc = forward_keys(keys, (size_t)n)) == 1)
		*end = END_DETACHED;
	/* EIO: it has just ended, and the reader is about to say so. */
	return rc == -EIO ? 0 : rc;
}

static int on_signal(enum ending *end, int *signo)
{
	struct signalfd_siginfo si;

	if (read(A.sig, &si, sizeof(si)) != sizeof(si))
		return -errno;
	if (si.ssi_signo == SIGWINCH) {
		send_size(); /* a size the terminal refuses leaves it as it was */
		return 0;
	}
	*signo = (int)si.ssi_signo;
	*end = END_SIGNALED;
	return 1;
}

/* Until a detach, a signal, the terminal's end or an error: the ending, or -errno. */
static int loop(int *signo)
{
	struct pollfd p[3] = {
	    {.fd = STDIN_FILENO, .events = POLLIN},
	    {.fd = A.sig, .events = POLLIN},
	    {.fd = A.done[0], .events = POLLIN},
	};
	enum ending end = END_DETACHED;
	int rc = 0;

	while (rc == 0) {
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[2].revents)
			return A.reader_rc < 0 ? A.reader_rc : (int)END_EXITED;
		if (p[1].revents)
			rc = on_signal(&end, signo);
		if (rc == 0 && p[0].revents)
			rc = on_keys(&end, signo);
	}
	return rc < 0 ? rc : (int)end;
}

/* The run itself, once the user's terminal is raw: the ending, or -errno. */
static int attach_run(int *signo)
{
	int rc;

	if ((rc = open_files()) < 0 || (rc = replay()) < 0 || (rc = start_reader()) < 0)
		return rc;
	return loop(signo);
}

static void close_all(void)
{
	int *fds[] = {&A.dir, &A.in, &A.out, &A.sig, &A.done[0], &A.done[1]};

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

/* Said on the restored terminal, on a line of its own: the exit status of the process. */
static int report(int end, int signo, const char *path)
{
	/* \r too: a program's bare \n leaves the cursor where it was in the line. */
	const char *nl = A.last_out && A.last_out != '\n' ? "\r\n" : "\r";
	int status;

	switch (end) {
	case END_DETACHED:
		fprintf(stderr, "%s[detached: %s runs on]\n", nl, path);
		return 0;
	case END_EXITED:
		if (attach_term_exit_status(A.dir, &status) < 0) { /* removed before it ever ran */
			fprintf(stderr, "%s[%s is gone]\n", nl, path);
			return 1;
		}
		fprintf(stderr, "%s[%s exited: status %d]\n", nl, path, status);
		return status;
	case END_SIGNALED:
		fprintf(stderr, "%s[detached (%s): %s runs on]\n", nl, strsignal(signo), path);
		return 128 + signo;
	default:
		fprintf(stderr, "%ssbxfs attach: %s: %s\n", nl, path, strerror(-end));
		return 1;
	}
}

int attach_main(int argc, char **argv)
{
	int rc, signo = 0, status;

	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc != 2) {
		usage(stderr);
		return 2;
	}
	if (attach_term_path_check(argv[1]) < 0) {
		fprintf(stderr,
			"sbxfs attach: %s: not a terminal's path, "
			"MOUNT/sessions/ID/terms/NAME\n",
			argv[1]);
		return 2;
	}
	if (!isatty(STDIN_FILENO)) {
		fprintf(stderr, "sbxfs attach: standard input is not a terminal\n");
		return 1;
	}
	A.utf8 = host_utf8();
	if ((A.dir = attach_term_open_dir(argv[1])) < 0) {
		fprintf(stderr, "sbxfs attach: %s: %s\n", argv[1], strerror(-A.dir));
		return 1;
	}
	if ((rc = open_signals()) < 0 || (rc = attach_tty_raw(STDIN_FILENO, &A.saved)) < 0) {
		fprintf(stderr, "sbxfs attach: %s\n", strerror(-rc));
		close_all();
		return 1;
	}
	rc = attach_run(&signo);
	stop_reader();
	attach_tty_reset_modes(STDOUT_FILENO);
	attach_tty_drain(STDIN_FILENO, STDOUT_FILENO);
	attach_tty_restore(STDIN_FILENO, &A.saved);
	status = report(rc, signo, argv[1]);
	close_all();
	return status;
}
