/* Result documents: the run's fields and its spools read back, text as JSON strings and
 * anything that is not UTF-8 as base64. */
#include "result.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "elapsed.h"
#include "json.h"
#include "loop.h"
#include "xmalloc.h"

/* What the core lock guards, taken at once; the spools no longer change once the run is done. */
struct snap {
	int status, fd[2];
	off_t size[2];
	bool capped[2], killed, timed_out;
	int kill_sig;
	unsigned n;
	struct timespec started, ended;
	char *error;
};

/* Adds "name":"text" (or its base64), "nameEncoding" and "nameTruncated". cut: the data was
 * cut short of what the run has, so a character cut at the end is not a bad byte. */
static void add_bytes(struct jbuf *b, const char *name, const char *data, size_t len, bool cut,
		      bool truncated)
{
	bool partial;
	size_t ok = utf8_prefix(data, len, &partial);
	bool text = ok == len || (cut && partial);

	jbuf_printf(b, "\"%s\":", name);
	if (text)
		json_string(b, data, ok);
	else
		json_base64(b, data, len);
	jbuf_printf(b, ",\"%sEncoding\":\"%s\",\"%sTruncated\":%s", name, text ? "utf-8" : "base64",
		    name, truncated ? "true" : "false");
}

static int add_stream(struct jbuf *b, const char *name, int fd, off_t size, bool capped)
{
	size_t want = (size_t)size < RESULT_STREAM_MAX ? (size_t)size : RESULT_STREAM_MAX;
	char *buf = xmalloc(want + 1);
	size_t got = 0;
	ssize_t n;

	while (got < want && (n = pread(fd, buf + got, want - got, (off_t)got)) != 0) {
		if (n < 0 && errno != EINTR) {
			free(buf);
			return -errno;
		}
		got += n > 0 ? (size_t)n : 0;
	}
	if (got < want) { /* the spool file is shorter than counted: say so, not pad it */
		free(buf);
		return -EIO;
	}
	add_bytes(b, name, buf, got, got < (size_t)size, capped || got < (size_t)size);
	free(buf);
	return 0;
}

int result_render(struct run *r, const char *sid, char **text, size_t *len)
{
	static const char *const names[2] = {"stdout", "stderr"};
	struct jbuf b = {0};
	struct snap sn;
	char stamp[32];
	struct tm tm;
	int rc = 0;

	core_lock();
	sn = (struct snap){.status = r->status,
			   .killed = r->killed,
			   .timed_out = r->timed_out,
			   .kill_sig = r->kill_sig,
			   .n = r->n,
			   .started = r->started,
			   .ended = r->ended,
			   .error = run_error_text(r)};
	for (int i = 0; i < 2; i++) {
		sn.fd[i] = r->out[i].fd;
		sn.size[i] = r->out[i].fd < 0 ? 0 : r->out[i].size;
		sn.capped[i] = r->out[i].truncated;
	}
	core_unlock();

	gmtime_r(&sn.started.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	jbuf_printf(&b, "{\"success\":%s,\"exitCode\":%d,", sn.status == 0 ? "true" : "false",
		    sn.status);
	for (int i = 0; i < 2 && rc == 0; i++) {
		rc = add_stream(&b, names[i], sn.fd[i], sn.size[i], sn.capped[i]);
		jbuf_add(&b, ",", 1);
	}
	if (rc < 0) {
		free(b.p);
		free(sn.error);
		return rc;
	}
	add_bytes(&b, "command", r->cmd,
		  r->cmdlen < RESULT_STREAM_MAX ? r->cmdlen : RESULT_STREAM_MAX,
		  r->cmdlen > RESULT_STREAM_MAX, r->cmdlen > RESULT_STREAM_MAX);
	jbuf_printf(&b, ",\"duration\":%lld,\"timestamp\":\"%s.%03ldZ\",\"sessionId\":",
		    (long long)elapsed_ms(&sn.started, &sn.ended),
		    stamp, sn.started.tv_nsec / 1000000);
	json_string(&b, sid, strlen(sid));
	jbuf_printf(&b, ",\"run\":%u,\"signal\":", sn.n);
	if (sn.killed)
		jbuf_printf(&b, "%d", sn.kill_sig);
	else
		jbuf_add(&b, "null", 4);
	jbuf_printf(&b,
		    ",\"timedOut\":%s,\"truncated\":%s,\"error\":", sn.timed_out ? "true" : "false",
		    sn.capped[0] || sn.capped[1] ? "true" : "false");
	if (sn.error)
		json_string(&b, sn.error, strlen(sn.error));
	else
		jbuf_add(&b, "null", 4);
	jbuf_add(&b, "}\n", 2);
	free(sn.error);
	*text = b.p;
	*len = b.len;
	return 0;
}
