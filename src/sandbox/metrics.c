/* The metrics' text (metrics.h): each family once, with its HELP and TYPE, then a sample per
 * scope (the sandbox, a session, a process) that has the value. Values come from the
 * groups (cgroup_stat.h) and the proxy's byte counts (net.h); the reads happen without the
 * core lock, under references to the sessions and processes. */
#include "metrics.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "cgroup_stat.h"
#include "job.h"
#include "net.h"
#include "session.h"
#include "xmalloc.h"

struct scope {
	char *labels; /* {session="ID"} */
	struct cg_stats st;
	bool has_net;
	uint64_t up, down;
};

enum { NET_OUT = CGS_N, NET_IN };

struct family {
	const char *name, *type, *help;
	int stat;   /* enum cg_stat, or NET_OUT, NET_IN: the proxy's counts, not a group's stat */
	bool micro; /* the stat counts millionths of the family's unit */
	const char *label; /* one more label (event="oom"), or NULL */
};

static const struct family families[] = {
    {"sbxfs_cpu_seconds_total", "counter", "CPU time of the processes, user and system.",
     CGS_CPU_USEC, true, NULL},
    {"sbxfs_memory_bytes", "gauge", "Memory in use.", CGS_MEM, false, NULL},
    {"sbxfs_memory_peak_bytes", "gauge", "The most memory in use since the group was made.",
     CGS_MEM_PEAK, false, NULL},
    {"sbxfs_memory_max_bytes", "gauge", "The memory limit.", CGS_MEM_MAX, false, NULL},
    {"sbxfs_memory_events_total", "counter", "memory.events: high, max, oom and oom_kill.",
     CGS_EV_HIGH, false, "event=\"high\""},
    {NULL, NULL, NULL, CGS_EV_MAX, false, "event=\"max\""},
    {NULL, NULL, NULL, CGS_EV_OOM, false, "event=\"oom\""},
    {NULL, NULL, NULL, CGS_EV_OOM_KILL, false, "event=\"oom_kill\""},
    {"sbxfs_io_bytes_total", "counter", "Bytes read and written by the processes.", CGS_IO_READ,
     false, "direction=\"read\""},
    {NULL, NULL, NULL, CGS_IO_WRITE, false, "direction=\"write\""},
    {"sbxfs_pids", "gauge", "Processes now.", CGS_PIDS, false, NULL},
    {"sbxfs_pids_max", "gauge", "The limit on processes.", CGS_PIDS_MAX, false, NULL},
    {"sbxfs_open_files", "gauge", "File descriptors the processes hold.", CGS_OPEN_FILES, false,
     NULL},
    {"sbxfs_network_bytes_total", "counter",
     "Bytes through the proxy by ended connections, sent (out) and received (in).", NET_OUT, false,
     "direction=\"out\""},
    {NULL, NULL, NULL, NET_IN, false, "direction=\"in\""},
};

/* A label's value as the format wants it: backslash, quote and newline escaped. */
static void add_label(FILE *out, const char *name, const char *value)
{
	fprintf(out, "%s=\"", name);
	for (const char *p = value; *p; p++)
		fputs(*p == '\\'   ? "\\\\"
		      : *p == '"'  ? "\\\""
		      : *p == '\n' ? "\\n"
				   : (char[]){*p, 0},
		      out);
	fputc('"', out);
}

static char *labels_of(const char *session, const char *proc)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	if (!session) {
		fputs("scope=\"sandbox\"", out);
	} else {
		add_label(out, "session", session);
		if (proc) {
			fputc(',', out);
			add_label(out, "proc", proc);
		}
	}
	fclose(out);
	return text;
}

static void sample(FILE *out, const struct family *f, const struct scope *sc)
{
	uint64_t v;

	if (f->stat >= NET_OUT) {
		if (!sc->has_net)
			return;
		v = f->stat == NET_OUT ? sc->up : sc->down;
	} else {
		if (!sc->st.has[f->stat])
			return;
		v = sc->st.v[f->stat];
	}
	fprintf(out, "%s{%s%s%s} ", f->name, sc->labels, f->label ? "," : "",
		f->label ? f->label : "");
	if (f->micro) /* exact: no float rounding */
		fprintf(out, "%llu.%06llu\n", (unsigned long long)(v / 1000000),
			(unsigned long long)(v % 1000000));
	else
		fprintf(out, "%llu\n", (unsigned long long)v);
}

static char *render(struct scope *sc, size_t n, size_t *len)
{
	char *text = NULL;
	FILE *out = open_memstream(&text, len);
	const char *name = NULL;

	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		struct family f = families[i];

		if (f.name) {
			name = f.name;
			fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name,
				f.type);
		}
		f.name = name;
		for (size_t k = 0; k < n; k++)
			sample(out, &f, &sc[k]);
	}
	fclose(out);
	return text;
}

static void session_scope(struct session *s, struct scope *sc)
{
	sc->labels = labels_of(session_id(s), NULL);
	cgroup_stats(session_cgroup(s), &sc->st);
	if (session_net(s)) {
		sc->has_net = true;
		net_bytes(session_net(s), &sc->up, &sc->down);
	}
}

char *metrics_render(struct session *s, struct job *j, size_t *len)
{
	struct session_info *ids = NULL;
	struct scope *sc;
	size_t n = 0, ns = 0;
	char *text;

	if (!s)
		ns = session_list(&ids);
	sc = xcalloc(ns + 1, sizeof(*sc));
	if (j) {
		sc[n].labels = labels_of(session_id(s), job_name(j));
		cgroup_stats(job_cgroup(j), &sc[n++].st);
	} else if (s) {
		session_scope(s, &sc[n++]);
	} else {
		sc[n].labels = labels_of(NULL, NULL);
		cgroup_stats(cgroup_sandbox(), &sc[n].st);
		sc[n].has_net = true;
		net_bytes(NULL, &sc[n].up, &sc[n].down);
		n++;
		for (size_t i = 0; i < ns; i++) {
			struct session *each = session_find(ids[i].id);

			if (each) {
				session_scope(each, &sc[n++]);
				session_unref(each);
			}
		}
	}
	text = render(sc, n, len);
	for (size_t i = 0; i < n; i++)
		free(sc[i].labels);
	free(sc);
	free(ids);
	return text;
}
