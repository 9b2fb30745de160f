/* Fuzz target: what the session driver writes back on fd 4 (shell_report_parse in
 * src/shell/shell_report.c, read the way shell.c's on_report_fd reads its stream: a lone NUL says a
 * command started, else a report). A command can write there too (through /proc), so the bytes
 * are outside bytes. Properties: a report is never taken before its last byte, it ends with an
 * empty field, its env holds valid NAME=VALUE entries only, written back out it parses to the
 * same report, and the stream reads the same however it is cut. */
#include "envlist.h"
#include "fuzz.h"
#include "shell.h"
#include "xmalloc.h"

/* A report written back in the driver's form. */
static char *serialise(const struct shell_report *rep, size_t *len)
{
	char status[16];
	const char *head[3] = {rep->seq, status, rep->cwd};
	size_t n, total;
	char *out;

	snprintf(status, sizeof(status), "%d", rep->status);
	total = strlen(rep->seq) + strlen(status) + strlen(rep->cwd) + 4;
	for (size_t i = 0; i < rep->env.n; i++)
		total += strlen(rep->env.v[i]) + 1;
	out = xmalloc(total);
	n = 0;
	for (size_t i = 0; i < rep->env.n + 3; i++) {
		const char *f = i < 3 ? head[i] : rep->env.v[i - 3];

		memcpy(out + n, f, strlen(f) + 1);
		n += strlen(f) + 1;
	}
	out[n++] = '\0';
	*len = n;
	return out;
}

static void check_report(const char *buf, size_t used, struct shell_report *rep)
{
	struct shell_report again;
	size_t len;
	char *text;

	FUZZ_ASSERT(used >= 4 && buf[used - 1] == '\0' && buf[used - 2] == '\0');
	for (size_t i = 0; i < rep->env.n; i++) {
		const char *eq = strchr(rep->env.v[i], '=');

		FUZZ_ASSERT(eq && env_name_valid(rep->env.v[i], (size_t)(eq - rep->env.v[i])));
	}
	text = serialise(rep, &len);
	FUZZ_ASSERT(shell_report_parse(text, len, &again) == len);
	FUZZ_ASSERT(!strcmp(again.seq, rep->seq) && again.status == rep->status &&
		    !strcmp(again.cwd, rep->cwd) && again.env.n == rep->env.n);
	for (size_t i = 0; i < rep->env.n; i++)
		FUZZ_ASSERT(!strcmp(again.env.v[i], rep->env.v[i]));
	envlist_free(&again.env);
	free(text);
}

/* Reads events from buf as on_report_fd does, folding each into *hash; returns the bytes
 * taken (what is left is an incomplete report). */
static size_t read_events(const char *buf, size_t len, uint64_t *hash, int check)
{
	struct shell_report rep, early;
	size_t off = 0, used;

	for (;;) {
		if (off < len && buf[off] == '\0') {
			used = 1;
			*hash = *hash * 31 + 1;
		} else if ((used = shell_report_parse(buf + off, len - off, &rep)) > 0) {
			FUZZ_ASSERT(used <= len - off);
			FUZZ_ASSERT(shell_report_parse(buf + off, used - 1, &early) == 0);
			if (check)
				check_report(buf + off, used, &rep);
			*hash = *hash * 31 + used;
			*hash = *hash * 31 + (uint64_t)rep.status + rep.env.n;
			envlist_free(&rep.env);
		} else {
			return off;
		}
		off += used;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	uint64_t whole = 0, cut = 0;
	size_t taken, at, first;

	taken = read_events(buf, size, &whole, 1);
	/* The same bytes in two reads, cut where the first byte says. */
	at = size ? data[0] % (size + 1) : 0;
	first = read_events(buf, at, &cut, 0);
	FUZZ_ASSERT(first <= at);
	FUZZ_ASSERT(first + read_events(buf + first, size - first, &cut, 0) == taken);
	FUZZ_ASSERT(cut == whole);
	return 0;
}
