/* The daemon <-> launcher protocol: length-prefixed messages on a stream socket; START carries
 * the child's fds with SCM_RIGHTS on its first byte, and a STARTED for START_PTY the pty master.
 * Header: u32 payload length, u32 type. */
#ifndef SBX_MSG_H
#define SBX_MSG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum msg_type {
	/* daemon: id, cwd, argv, envp, nfds, ncg; nfds + ncg fds attached: the child's fds
	 * 0..nfds-1, then cgroup.procs files it writes "0" to before exec. */
	MSG_START = 1,
	MSG_SIGNAL = 2,  /* daemon: id, signal, to the whole process group or not */
	MSG_STARTED = 3, /* launcher: id, pid (0 when fork failed), errno */
	MSG_EXITED = 4,  /* launcher: id, wait status */
	MSG_HOLD = 5,    /* daemon: id, one fd attached: keep it open for /proc/PID/fd/N */
	MSG_HELD = 6,    /* launcher: id, the fd number its holder holds (-1: none), its pid */
	MSG_DROP = 7,    /* daemon: id: close the held fd */
	/* daemon: as START with no stdio fds, then rows, cols: the launcher opens a pty in the
	 * sandbox's devpts, the child gets its slave as stdio and controlling tty, and the
	 * STARTED that answers carries the master fd (none when the start failed). */
	MSG_START_PTY = 8,
	/* launcher, before its hello: the listener of its seccomp filter (filter.h) attached */
	MSG_NOTIFY = 9,
};

/* STARTED's err when the message carries the pty master (it started) */
#define MSG_FD_ATTACHED (-1)

#define MSG_HDR 8u
#define MSG_MAX (8u << 20)
#define MSG_MAXFDS 16

struct msgbuf {
	char *data;
	size_t len, cap;
};

struct msg {
	uint32_t type;
	uint64_t id;
	int32_t a, b;     /* SIGNAL: sig, group; STARTED: pid, err (id 0, the hello: the
			     launcher's pid, its holder's); EXITED: status */
	char *cwd;        /* START */
	char **argv;      /* START, NULL-terminated */
	char **envp;      /* START, NULL-terminated */
	uint32_t nfds;    /* START: stdio fds */
	uint32_t ncg;     /* START: cgroup fds after them */
	uint32_t rows, cols; /* START_PTY: the window size */
};

void msgbuf_free(struct msgbuf *b);
void msg_start_encode(struct msgbuf *b, uint64_t id, const char *cwd, char *const argv[],
		      char *const envp[], uint32_t nfds, uint32_t ncg);
void msg_start_pty_encode(struct msgbuf *b, uint64_t id, const char *cwd, char *const argv[],
			  char *const envp[], uint32_t ncg, uint32_t rows, uint32_t cols);
void msg_int_encode(struct msgbuf *b, uint32_t type, uint64_t id, int32_t a, int32_t b2);

/* Length of the first whole message in buf: 0 if incomplete, -EBADMSG if malformed. */
ssize_t msg_frame_len(const char *buf, size_t len);
/* Decodes one whole frame; -EBADMSG if malformed. m must be freed with msg_free. */
int msg_decode(const char *buf, size_t len, struct msg *m);
void msg_free(struct msg *m);

#endif
