/* sbxfs attach: a person's terminal on a sandbox terminal (sessions/ID/terms/NAME), through
 * the files of the mount only. attach.c runs it, attach_term.c reads and writes the terminal's
 * files, attach_tty.c handles the user's own terminal, attach_filter.c keeps what the sandbox
 * prints from controlling it. */
#ifndef SBX_ATTACH_H
#define SBX_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <termios.h>

/* `sbxfs attach ...` (argv[0] is "attach"): the process's exit status. */
int attach_main(int argc, char **argv);

/* What status says of a sandbox terminal. */
struct attach_term_status {
	bool started;
	unsigned cursor_row, cursor_col; /* from 0 */
	unsigned long long bytes_out;
};

/* 0 if path names MOUNT/sessions/ID/terms/NAME, -EINVAL otherwise (judged as written when
 * its parent does not exist). */
int attach_term_path_check(const char *path);
/* The terminal's directory, made if missing: an fd, or -errno. */
int attach_term_open_dir(const char *path);
int attach_term_read_status(int dir, struct attach_term_status *st);
/* The whole of a file of the terminal, in *buf (the caller frees it). */
int attach_term_read(int dir, const char *name, char **buf, size_t *len);
int attach_term_set_size(int dir, unsigned rows, unsigned cols);
/* Starts a terminal that has not started yet, with the session's interactive shell. */
int attach_term_start(int dir);
/* Its exit status, once it has exited. */
int attach_term_exit_status(int dir, int *status);

int write_all(int fd, const void *buf, size_t len);
int attach_tty_raw(int fd, struct termios *saved);
int attach_tty_restore(int fd, const struct termios *saved);
int attach_tty_size(int fd, unsigned *rows, unsigned *cols);
/* Clears the screen, draws text (lines separated by '\n', each through a filter of its
 * own), puts the cursor at row, col. */
int attach_tty_draw_screen(int fd, const char *text, size_t len, unsigned row, unsigned col,
			   bool utf8);
int attach_tty_reset_modes(int fd);
/* Reads and drops what in (the user's terminal) sends until it stays quiet a moment, once out
 * has the reset: keys and reports meant for the sandbox, not for the user's shell. */
int attach_tty_drain(int in, int out);

/* The sandbox's output as the user's terminal may see it: text, and only the control sequences
 * that draw (attach_filter.c has the rules). State carries over from one call to the next, so
 * a sequence or a UTF-8 character may be split anywhere. */
#define ATTACH_FILTER_PARAMS 128 /* a longer CSI is dropped */
#define ATTACH_FILTER_INTER  4
struct attach_filter {
	bool utf8; /* the user's terminal reads UTF-8 */
	int state;
	/* The UTF-8 character being read: its bits so far, the bytes still due, and the range
	 * the next one must be in (which rules out overlong forms and surrogates). */
	uint32_t cp;
	unsigned due;
	unsigned char lo, hi;
	/* The escape or control sequence being read, kept until its final byte decides. */
	char prefix; /* CSI's private marker (< = > ?), or 0 */
	char params[ATTACH_FILTER_PARAMS];
	size_t nparams;
	char inter[ATTACH_FILTER_INTER];
	size_t ninter;
	bool osc; /* the string being dropped is an OSC, which BEL ends too */
};
/* What attach_filter_run may write for len bytes in: 3 bytes (U+FFFD) per invalid byte, and
 * one sequence held from earlier calls. */
#define ATTACH_FILTER_OUT_MAX(len) (3 * (len) + ATTACH_FILTER_PARAMS + 16)

void attach_filter_init(struct attach_filter *f, bool utf8);
/* Filters len bytes of in into out (ATTACH_FILTER_OUT_MAX(len) bytes): the bytes written. */
size_t attach_filter_run(struct attach_filter *f, const char *in, size_t len, char *out);

#endif
