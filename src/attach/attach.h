/* sbxfs attach: a person's terminal on a sandbox terminal (sessions/ID/terms/NAME), through
 * the files of the mount only. attach.c runs it, attach_term.c reads and writes the terminal's
 * files, attach_tty.c handles the user's own terminal. */
#ifndef SBX_ATTACH_H
#define SBX_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
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
/* Clears the screen, draws text (lines separated by '\n'), puts the cursor at row, col. */
int attach_tty_draw_screen(int fd, const char *text, size_t len, unsigned row, unsigned col);
int attach_tty_reset_modes(int fd);

#endif
