/* A session's timeout, ctl and status files (see session.h): parsing and applying ctl verbs
 * (the kills themselves are exec_kill.c's) and the status a session reports. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cgroup_mem.h"
#include "changes.h"
#include "session_priv.h"
#include "verb.h"
#include "xmalloc.h"

/* The timeout file's text: decimal milliseconds, a trailing newline or spaces allowed. */
static int parse_ms(const char *text, size_t len, uint64_t *ms)
{
	char buf[32];

	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
		len--;
	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, text, len);
	buf[len] = '\0';
	return verb_parse_ms(buf, ms);
}

uint64_t session_timeout(struct session *s)
{
	uint64_t ms;

	core_lock();
	ms = s->timeout_ms;
	core_unlock();
	return ms;
}

int session_set_timeout(struct session *s, const char *text, size_t len)
{
	uint64_t ms;

	if (parse_ms(text, len, &ms) < 0)
		return -EINVAL;
	core_lock();
	s->timeout_ms = ms;
	core_unlock();
	changes_note();
	return 0;
}

/* The verbs of a session's ctl, applied with the core lock held. */
static int verb_kill(void *obj, const char *name, const struct verb_value *v)
{
	int rc = exec_kill_all(obj, v->sig);

	/* kill wants something to end; killall is done when nothing is left. */
	if (rc == 0 && !strcmp(name, "kill"))
		return -ESRCH;
	return rc < 0 ? rc : 0;
}

static int verb_timeout(void *obj, const char *name, const struct verb_value *v)
{
	struct session *s = obj;

	(void)name;
	s->next_timeout_ms = v->ms;
	s->next_timeout_set = true;
	return 0;
}

static int verb_restart(void *obj, const char *name, const struct verb_value *v)
{
	(void)name;
	(void)v;
	return exec_restart(obj);
}

static const struct verb verbs[] = {
    {"kill", VA_SIGNAL, verb_kill},
    {"killall", VA_SIGNAL, verb_kill},
    {"timeout", VA_MS, verb_timeout},
    {"restart", VA_NONE, verb_restart},
};

int session_ctl(struct session *s, const char *line, size_t len)
{
	int rc;

	if (!s)
		return verb_run(VERBS(verbs), NULL, line, len);
	core_lock();
	rc = s->removed ? -ENOENT : verb_run(VERBS(verbs), s, line, len);
	core_unlock();
	return rc;
}

bool session_busy(struct session *s)
{
	pid_t *pids;
	bool busy;
	size_t n;

	core_lock();
	busy = s->current || s->st == SH_BUSY;
	core_unlock();
	if (busy)
		return true;
	/* The shell, and anything else is what commands left behind. */
	n = cgroup_pids(s->cg, &pids);
	free(pids);
	return n > 1;
}

void session_mark_restored(struct session *s)
{
	core_lock();
	clock_gettime(CLOCK_REALTIME, &s->restored);
	core_unlock();
}

char *session_status(struct session *s, size_t *len)
{
	struct run *latest;
	unsigned queued = 0;
	struct op *op;
	char state[32], restored[32] = "no", *head, *tail, *text;

	core_lock();
	TAILQ_FOREACH(op, &s->queue, link)
	queued += op->kind == OP_RUN;
	latest = TAILQ_LAST(&s->runs, run_list);
	if (queued)
		snprintf(state, sizeof(state), "queued %u", queued);
	else if ((s->current && s->current->kind == OP_RUN) || (latest && latest->ending))
		snprintf(state, sizeof(state), "running"); /* an end not yet published too */
	else
		snprintf(state, sizeof(state), "idle");
	if (s->restored.tv_sec) /* Unix time, as a run's started */
		snprintf(restored, sizeof(restored), "%lld.%03ld", (long long)s->restored.tv_sec,
			 s->restored.tv_nsec / 1000000);
	head = xasprintf("state %s\nqueued %u\nshell_pid %d\nrestarts %u\nrestored %s\n"
			 "timeout %llu\noom_kills %llu\n",
			 state, queued, s->sh ? (int)shell_pid(s->sh) : 0, s->restarts, restored,
			 (unsigned long long)s->timeout_ms,
			 (unsigned long long)cgroup_mem_oom_kills(s->cg, true));
	tail = latest ? run_describe(latest) : xstrdup("");
	core_unlock();
	text = xasprintf("%s%s", head, tail);
	free(head);
	free(tail);
	*len = strlen(text);
	return text;
}
