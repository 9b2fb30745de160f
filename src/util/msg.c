/* Encoding and decoding of launcher protocol messages (see msg.h); shared by both ends. */
#include "msg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

void msgbuf_free(struct msgbuf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

static void put(struct msgbuf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->data = xrealloc(b->data, b->cap);
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void put_u32(struct msgbuf *b, uint32_t v)
{
	put(b, &v, sizeof(v));
}

static void put_u64(struct msgbuf *b, uint64_t v)
{
	put(b, &v, sizeof(v));
}

static void put_str(struct msgbuf *b, const char *s)
{
	size_t n = strlen(s);

	put_u32(b, (uint32_t)n);
	put(b, s, n);
}

static void put_strv(struct msgbuf *b, char *const v[])
{
	uint32_t n = 0;

	while (v[n])
		n++;
	put_u32(b, n);
	for (uint32_t i = 0; i < n; i++)
		put_str(b, v[i]);
}

static size_t begin(struct msgbuf *b, uint32_t type)
{
	size_t start = b->len;

	put_u32(b, 0);
	put_u32(b, type);
	return start;
}

static void end(struct msgbuf *b, size_t start)
{
	uint32_t plen = (uint32_t)(b->len - start - MSG_HDR);

	memcpy(b->data + start, &plen, sizeof(plen));
}

void msg_start_encode(struct msgbuf *b, uint64_t id, const char *cwd, char *const argv[],
		      char *const envp[], uint32_t nfds, uint32_t ncg)
{
	size_t start = begin(b, MSG_START);

	put_u64(b, id);
	put_str(b, cwd);
	put_strv(b, argv);
	put_strv(b, envp);
	put_u32(b, nfds);
	put_u32(b, ncg);
	end(b, start);
}

void msg_start_pty_encode(struct msgbuf *b, uint64_t id, const char *cwd, char *const argv[],
			  char *const envp[], uint32_t ncg, uint32_t rows, uint32_t cols)
{
	size_t start = begin(b, MSG_START_PTY);

	put_u64(b, id);
	put_str(b, cwd);
	put_strv(b, argv);
	put_strv(b, envp);
	put_u32(b, 0);
	put_u32(b, ncg);
	put_u32(b, rows);
	put_u32(b, cols);
	end(b, start);
}

void msg_int_encode(struct msgbuf *b, uint32_t type, uint64_t id, int32_t a, int32_t b2)
{
	size_t start = begin(b, type);

	put_u64(b, id);
	put_u32(b, (uint32_t)a);
	put_u32(b, (uint32_t)b2);
	end(b, start);
}

ssize_t msg_frame_len(const char *buf, size_t len)
{
	uint32_t plen;

	if (len < MSG_HDR)
		return 0;
	memcpy(&plen, buf, sizeof(plen));
	if (plen > MSG_MAX)
		return -EBADMSG;
	return len < MSG_HDR + plen ? 0 : (ssize_t)(MSG_HDR + plen);
}

struct reader {
	const char *p;
	size_t left;
	int bad;
};

static void get(struct reader *r, void *out, size_t n)
{
	if (r->bad || r->left < n) {
		r->bad = 1;
		memset(out, 0, n);
		return;
	}
	memcpy(out, r->p, n);
	r->p += n;
	r->left -= n;
}

static uint32_t get_u32(struct reader *r)
{
	uint32_t v;

	get(r, &v, sizeof(v));
	return v;
}

static char *get_str(struct reader *r)
{
	uint32_t n = get_u32(r);
	char *s;

	if (r->bad || n > r->left) {
		r->bad = 1;
		return NULL;
	}
	s = xstrndup(r->p, n);
	if (memchr(s, '\0', n))
		r->bad = 1;
	r->p += n;
	r->left -= n;
	return s;
}

static char **get_strv(struct reader *r)
{
	uint32_t n = get_u32(r);
	char **v;

	/* Each string needs at least its 4-byte length. */
	if (r->bad || n > r->left / 4) {
		r->bad = 1;
		return NULL;
	}
	v = xcalloc(n + 1, sizeof(char *));
	for (uint32_t i = 0; i < n && !r->bad; i++)
		v[i] = get_str(r);
	return v;
}

static void strv_free(char **v)
{
	if (!v)
		return;
	for (size_t i = 0; v[i]; i++)
		free(v[i]);
	free(v);
}

int msg_decode(const char *buf, size_t len, struct msg *m)
{
	struct reader r = {buf + MSG_HDR, len - MSG_HDR, 0};

	memset(m, 0, sizeof(*m));
	if (len < MSG_HDR)
		return -EBADMSG;
	memcpy(&m->type, buf + 4, sizeof(m->type));
	get(&r, &m->id, sizeof(m->id));
	switch (m->type) {
	case MSG_START:
	case MSG_START_PTY:
		m->cwd = get_str(&r);
		m->argv = get_strv(&r);
		m->envp = get_strv(&r);
		m->nfds = get_u32(&r);
		m->ncg = get_u32(&r);
		if (m->type == MSG_START_PTY) {
			m->rows = get_u32(&r);
			m->cols = get_u32(&r);
			if (m->nfds || !m->rows || !m->cols || m->rows > 0xffff || m->cols > 0xffff)
				r.bad = 1;
		}
		if (!r.bad && (m->nfds > MSG_MAXFDS || m->ncg > MSG_MAXFDS - m->nfds ||
			       !m->argv[0]))
			r.bad = 1;
		break;
	case MSG_SIGNAL:
	case MSG_STARTED:
	case MSG_EXITED:
	case MSG_HOLD:
	case MSG_HELD:
	case MSG_DROP:
	case MSG_NOTIFY:
		m->a = (int32_t)get_u32(&r);
		m->b = (int32_t)get_u32(&r);
		break;
	default:
		r.bad = 1;
	}
	if (r.bad || r.left) {
		msg_free(m);
		return -EBADMSG;
	}
	return 0;
}

void msg_free(struct msg *m)
{
	free(m->cwd);
	strv_free(m->argv);
	strv_free(m->envp);
	memset(m, 0, sizeof(*m));
}
