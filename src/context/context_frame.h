/* The events a context's driver sends: length-prefixed JSON frames read from a nonblocking pipe
 * and parsed strictly (RFC 8259, UTF-8). Every frame is attacker input (a cell runs in the
 * driver's process): sizes are bounded, nesting is bounded, anything unexpected is an error,
 * never a guess, and nothing of a frame's text is passed on unparsed. */
#ifndef SBX_CONTEXT_FRAME_H
#define SBX_CONTEXT_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest frame a driver may send (one displayed value with all its formats). */
#define CTX_FRAME_MAX (32u << 20)
/* The formats a result may carry, in this order everywhere (files, JSON). */
#define CTX_FORMATS 9

enum ctx_ev { EV_READY, EV_RESULT, EV_ERROR, EV_DONE };

struct ctx_event {
	enum ctx_ev ev;
	bool main;
	/* EV_RESULT: each format's value, or NULL: text, or for application/json the value as
	 * compact JSON that the parser wrote from what it parsed (its own brackets, separators and
	 * string escapes; numbers and literals as checked), never the driver's text copied. */
	char *data[CTX_FORMATS];
	size_t datalen[CTX_FORMATS];
	/* EV_ERROR */
	char *name, *value, *traceback;
};

struct ctx_reader {
	uint8_t head[4];
	size_t got;   /* bytes of the head, then of the body */
	uint32_t len; /* of the body, once the head is in */
	char *body;
};

/* The file suffix of format i (its MIME type is the driver's key). */
const char *ctx_format_ext(unsigned i);
/* The SDK's field name for format i (text, html, png, ...). */
const char *ctx_format_field(unsigned i);
/* Whether format i is base64 on the wire and raw bytes in its file. */
bool ctx_format_binary(unsigned i);

/* Reads what the pipe has: 1 and *ev filled when a whole frame is in, 0 when the pipe is
 * empty for now, -EPIPE at EOF, -EMSGSIZE for an oversize frame, -EPROTO for a malformed
 * one, other -errno from read. */
int ctx_reader_step(struct ctx_reader *r, int fd, struct ctx_event *ev);
void ctx_reader_free(struct ctx_reader *r);
void ctx_event_free(struct ctx_event *ev);
/* Parses one frame's body; 0 or -EPROTO (nothing left allocated then). */
int ctx_event_parse(const char *body, size_t len, struct ctx_event *ev);

#endif
