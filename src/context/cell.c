/* Cells (see cell.h): their displayed values and error as the driver reported them, their end,
 * and the files rendered from them: status, error, the result JSON and each format's file. */
#include "cell.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "loop.h"
#include "result.h"
#include "xmalloc.h"

struct cell *cell_new(unsigned n, const char *code, size_t len, const char *spool_base,
		      uint64_t output_cap, int *err)
{
	struct run *r = run_new(n, code, len, spool_base, output_cap, err);
	struct cell *c;

	if (!r)
		return NULL;
	c = xcalloc(1, sizeof(*c));
	c->refs = 1;
	c->n = n;
	c->run = r;
	return c;
}

void cell_ref(struct cell *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
}

void cell_unref(struct cell *c)
{
	if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	for (size_t i = 0; i < c->nres; i++)
		for (int f = 0; f < CTX_FORMATS; f++)
			free(c->res[i].data[f]);
	free(c->res);
	free(c->err_name);
	free(c->err_value);
	free(c->err_tb);
	run_unref(c->run);
	free(c);
}

const char *cell_state_name(enum cell_state st)
{
	static const char *const names[] = {"queued",  "running",     "done",  "error",
					    "timeout", "interrupted", "killed"};

	return names[st];
}

/* Core lock held: the state readers see; running until its end is published (run_end). */
static enum cell_state shown_state(const struct cell *c)
{
	return c->run->ending ? CELL_RUNNING : c->st;
}

void cell_add_result(struct cell *c, struct ctx_event *ev)
{
	struct cell_result *cr;
	size_t bytes = 0;

	for (int f = 0; f < CTX_FORMATS; f++)
		bytes += ev->datalen[f];
	if (c->nres >= CELL_RESULTS_COUNT || bytes > CELL_RESULTS_MAX - c->res_bytes) {
		c->res_dropped = true;
		return;
	}
	c->res = xrealloc(c->res, (c->nres + 1) * sizeof(*c->res));
	cr = &c->res[c->nres++];
	for (int f = 0; f < CTX_FORMATS; f++) {
		cr->data[f] = ev->data[f];
		cr->len[f] = ev->datalen[f];
		ev->data[f] = NULL;
	}
	cr->main = ev->main;
	c->res_bytes += bytes;
}

void cell_set_error(struct cell *c, char *name, char *value, char *tb)
{
	if (c->err_name) {
		free(name);
		free(value);
		free(tb);
		return;
	}
	c->err_name = name;
	c->err_value = value;
	c->err_tb = tb;
}

void cell_finish(struct cell *c, enum cell_state st)
{
	c->st = st;
	run_end(c->run, st == CELL_DONE ? 0 : 1);
}

int cell_wait(struct cell *c, struct waiter *w)
{
	int status;

	return run_wait_exit(c->run, &status, w);
}

static void stamp(char *buf, size_t len, const struct timespec *ts, bool valid)
{
	if (valid)
		snprintf(buf, len, "%lld.%03ld", (long long)ts->tv_sec, ts->tv_nsec / 1000000);
	else
		snprintf(buf, len, "-");
}

char *cell_status(struct cell *c, size_t *len)
{
	char started[32], ended[32], *text;

	core_lock();
	stamp(started, sizeof(started), &c->run->started, c->run->state != RUN_QUEUED);
	stamp(ended, sizeof(ended), &c->run->ended, c->run->state == RUN_DONE);
	text = xasprintf("cell %u\nstate %s\nstarted %s\nended %s\nresults %zu\n%s%s", c->n,
			 cell_state_name(shown_state(c)), started, ended, c->nres,
			 c->res_dropped ? "results_dropped yes\n" : "",
			 c->run->budget.dropped ? "output_dropped yes\n" : "");
	core_unlock();
	*len = strlen(text);
	return text;
}

char *cell_error_text(struct cell *c, size_t *len)
{
	char *text;

	core_lock();
	if (!c->err_name)
		text = xstrdup("");
	else
		text =
		    xasprintf("%s\n%s\n%s%s", c->err_name, c->err_value, c->err_tb,
			      *c->err_tb && c->err_tb[strlen(c->err_tb) - 1] != '\n' ? "\n" : "");
	core_unlock();
	*len = strlen(text);
	return text;
}

/* Text for JSON: bytes that are not UTF-8 become U+FFFD. */
static void add_lossy(struct jbuf *b, const char *s, size_t len)
{
	struct jbuf t = {0};

	while (len) {
		size_t ok = utf8_prefix(s, len, NULL);

		jbuf_add(&t, s, ok);
		if (ok == len)
			break;
		jbuf_add(&t, "\xef\xbf\xbd", 3);
		s += ok + 1;
		len -= ok + 1;
	}
	json_string(b, t.p ? t.p : "", t.len);
	free(t.p);
}

/* logs.NAME: the stream as one text in an array (empty: no element), cut at
 * RESULT_STREAM_MAX. */
static int add_log(struct jbuf *b, int fd, off_t size)
{
	size_t want = (size_t)size < RESULT_STREAM_MAX ? (size_t)size : RESULT_STREAM_MAX;
	char *buf = xmalloc(want + 1);
	ssize_t got = want && fd >= 0 ? pread(fd, buf, want, 0) : 0;

	if (got < 0) {
		free(buf);
		return -EIO;
	}
	jbuf_add(b, "[", 1);
	if (got > 0)
		add_lossy(b, buf, (size_t)got);
	jbuf_add(b, "]", 1);
	free(buf);
	return 0;
}

static void add_results(struct jbuf *b, const struct cell *c)
{
	jbuf_add(b, "\"results\":[", 11);
	for (size_t i = 0; i < c->nres; i++) {
		const struct cell_result *cr = &c->res[i];
		bool first = true;

		jbuf_add(b, i ? ",{" : "{", i ? 2 : 1);
		for (unsigned f = 0; f < CTX_FORMATS; f++) {
			if (!cr->data[f])
				continue;
			jbuf_printf(b, "%s\"%s\":", first ? "" : ",", ctx_format_field(f));
			first = false;
			if (f == 7) /* application/json: JSON that the frame parser wrote */
				jbuf_add(b, cr->data[f], cr->len[f]);
			else
				json_string(b, cr->data[f], cr->len[f]);
		}
		jbuf_printf(b, "%s\"isMainResult\":%s}", first ? "" : ",",
			    cr->main ? "true" : "false");
	}
	jbuf_add(b, "]", 1);
}

/* The traceback as the SDK has it: a list of lines. The texts are lossy: a driver that did
 * not start is explained with what it wrote, whatever its bytes. */
static void add_error(struct jbuf *b, const struct cell *c)
{
	const char *tb = c->err_tb, *nl;

	if (!c->err_name) {
		jbuf_add(b, "null", 4);
		return;
	}
	jbuf_add(b, "{\"name\":", 8);
	add_lossy(b, c->err_name, strlen(c->err_name));
	jbuf_add(b, ",\"value\":", 9);
	add_lossy(b, c->err_value, strlen(c->err_value));
	jbuf_add(b, ",\"traceback\":[", 14);
	for (bool first = true; *tb; first = false) {
		nl = strchr(tb, '\n');
		if (!first)
			jbuf_add(b, ",", 1);
		add_lossy(b, tb, nl ? (size_t)(nl - tb) : strlen(tb));
		tb = nl ? nl + 1 : tb + strlen(tb);
	}
	jbuf_add(b, "]}", 2);
}

int cell_result_json(struct cell *c, char **text, size_t *len)
{
	struct jbuf b = {0};
	int fd[2], rc = 0;
	off_t size[2];

	/* The spools' ends under the lock; the rest is read outside it: an ended cell's values
	 * and error no longer change, and the spools stay open while the run is referenced. */
	core_lock();
	for (int i = 0; i < 2; i++) {
		fd[i] = c->run->out[i].fd;
		size[i] = fd[i] < 0 ? 0 : c->run->out[i].size;
	}
	core_unlock();
	jbuf_add(&b, "{", 1);
	add_results(&b, c);
	jbuf_add(&b, ",\"logs\":{\"stdout\":", 18);
	rc = add_log(&b, fd[0], size[0]);
	jbuf_add(&b, ",\"stderr\":", 10);
	if (rc == 0)
		rc = add_log(&b, fd[1], size[1]);
	jbuf_add(&b, "},\"error\":", 10);
	add_error(&b, c);
	jbuf_printf(&b, ",\"executionCount\":%u,\"status\":\"%s\",\"resultsDropped\":%s}\n", c->n,
		    cell_state_name(shown_state(c)), c->res_dropped ? "true" : "false");
	if (rc < 0) {
		free(b.p);
		return rc;
	}
	*text = b.p;
	*len = b.len;
	return 0;
}

static int b64_value(char ch)
{
	static const char alphabet[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = ch ? strchr(alphabet, ch) : NULL;

	return p ? (int)(p - alphabet) : -1;
}

/* Decodes base64, skipping whitespace (IPython may wrap it); stops at '=' or a bad byte. */
static size_t b64_decode(const char *in, size_t len, char *out)
{
	unsigned acc = 0, bits = 0;
	size_t n = 0;

	for (size_t i = 0; i < len && in[i] != '='; i++) {
		int v = b64_value(in[i]);

		if (v < 0) {
			if (strchr(" \r\n\t", in[i]) && in[i])
				continue;
			break;
		}
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (char)((acc >> bits) & 0xff);
		}
	}
	return n;
}

int cell_result_file(struct cell *c, unsigned k, unsigned f, char **data, size_t *len)
{
	char *copy = NULL;
	size_t n = 0;

	/* Copied under the lock (a running cell's list may move), decoded outside it. */
	core_lock();
	if (k < c->nres && f < CTX_FORMATS && c->res[k].data[f])
		copy = xmemdup(c->res[k].data[f], (n = c->res[k].len[f]) + 1);
	core_unlock();
	if (!copy)
		return -ENOENT;
	if (ctx_format_binary(f)) /* in place: the bytes are behind the text they come from */
		n = b64_decode(copy, n, copy);
	*len = n;
	*data = copy;
	return 0;
}

bool cell_result_has(struct cell *c, unsigned k, unsigned f)
{
	bool has;

	core_lock();
	has = k < c->nres && f < CTX_FORMATS && c->res[k].data[f];
	core_unlock();
	return has;
}

size_t cell_result_count(struct cell *c)
{
	size_t n;

	core_lock();
	n = c->nres;
	core_unlock();
	return n;
}
