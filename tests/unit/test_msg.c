/* Unit tests: launcher protocol messages round-trip, and malformed frames are refused. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "msg.h"

static void test_start_roundtrip(void)
{
	char *argv[] = {"/bin/bash", "-c", "echo '\n\0x'", NULL};
	char *envp[] = {"A=1", "B=", NULL};
	struct msgbuf b = {0};
	struct msg m;

	msg_start_encode(&b, 42, "/work dir", argv, envp, 5, 4);
	CHECK(msg_frame_len(b.data, b.len) == (ssize_t)b.len);
	CHECK(msg_frame_len(b.data, b.len - 1) == 0);
	CHECK(msg_frame_len(b.data, 3) == 0);
	CHECK(msg_decode(b.data, b.len, &m) == 0);
	CHECK(m.type == MSG_START && m.id == 42 && m.nfds == 5 && m.ncg == 4);
	CHECK(!strcmp(m.cwd, "/work dir"));
	CHECK(!strcmp(m.argv[2], argv[2]) && m.argv[3] == NULL);
	CHECK(!strcmp(m.envp[1], "B=") && m.envp[2] == NULL);
	msg_free(&m);
	msgbuf_free(&b);
}

static void test_int_roundtrip(void)
{
	struct msgbuf b = {0};
	struct msg m;

	msg_int_encode(&b, MSG_EXITED, 7, 9 << 8, -1);
	CHECK(msg_decode(b.data, b.len, &m) == 0);
	CHECK(m.type == MSG_EXITED && m.id == 7 && m.a == 9 << 8 && m.b == -1);
	msg_free(&m);
	msgbuf_free(&b);
}

static void test_malformed(void)
{
	char *argv[] = {"x", NULL};
	struct msgbuf b = {0};
	struct msg m;
	uint32_t huge = MSG_MAX + 1, type = 99;

	msg_start_encode(&b, 1, "/", argv, argv, 10, 7); /* too many fds */
	CHECK(msg_decode(b.data, b.len, &m) == -EBADMSG);
	msgbuf_free(&b);

	msg_start_encode(&b, 1, "/", argv, argv, 1, 0);
	CHECK(msg_decode(b.data, b.len - 2, &m) == -EBADMSG); /* truncated */
	memcpy(b.data + 4, &type, 4);
	CHECK(msg_decode(b.data, b.len, &m) == -EBADMSG); /* unknown type */
	memcpy(b.data, &huge, 4);
	CHECK(msg_frame_len(b.data, b.len) == -EBADMSG);
	msgbuf_free(&b);

	{
		char *noargs[] = {NULL};

		msg_start_encode(&b, 1, "/", noargs, noargs, 0, 0); /* nothing to exec */
		CHECK(msg_decode(b.data, b.len, &m) == -EBADMSG);
		msgbuf_free(&b);
	}
}

static void test_start_pty(void)
{
	char *argv[] = {"/bin/bash", "-i", NULL};
	char *envp[] = {"TERM=xterm-256color", NULL};
	struct msgbuf b = {0};
	struct msg m;

	msg_start_pty_encode(&b, 9, "/w", argv, envp, 2, 24, 80);
	CHECK(msg_decode(b.data, b.len, &m) == 0);
	CHECK(m.type == MSG_START_PTY && m.id == 9 && m.nfds == 0 && m.ncg == 2);
	CHECK(m.rows == 24 && m.cols == 80 && !strcmp(m.argv[1], "-i"));
	msg_free(&m);
	msgbuf_free(&b);
	msg_start_pty_encode(&b, 9, "/w", argv, envp, 2, 0, 80); /* no rows */
	CHECK(msg_decode(b.data, b.len, &m) == -EBADMSG);
	msgbuf_free(&b);
	msg_start_pty_encode(&b, 9, "/w", argv, envp, 2, 24, 70000); /* past a winsize */
	CHECK(msg_decode(b.data, b.len, &m) == -EBADMSG);
	msgbuf_free(&b);
}

int main(void)
{
	test_start_roundtrip();
	test_start_pty();
	test_int_roundtrip();
	test_malformed();
	return check_done();
}
