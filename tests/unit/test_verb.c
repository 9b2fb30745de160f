/* Unit tests: a ctl file's verb table (src/util/verb.c): which lines a table takes, what it
 * hands the row's function, and that a check (no object) applies nothing. */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "check.h"
#include "verb.h"

static int applied;
static struct verb_value last;
static const char *last_name;

static int apply(void *obj, const char *name, const struct verb_value *v)
{
	(void)obj;
	applied++;
	last = *v;
	last_name = name;
	return strcmp(name, "fails") ? 0 : -ESRCH;
}

static const struct verb table[] = {
    {"kill", VA_SIGNAL, apply},
    {"timeout", VA_MS, apply},
    {"restart", VA_NONE, apply},
    {"fails", VA_NONE, apply},
};

static int run(void *obj, const char *line)
{
	return verb_run(VERBS(table), obj, line, strlen(line));
}

int main(void)
{
	int obj;

	/* Checked: the verdict, nothing applied. */
	CHECK(run(NULL, "kill") == 0);
	CHECK(run(NULL, "kill HUP\n") == 0);
	CHECK(run(NULL, "timeout 5000") == 0);
	CHECK(run(NULL, "restart") == 0);
	CHECK(run(NULL, "fails") == 0);
	CHECK(applied == 0);
	/* Lines no row takes. */
	CHECK(run(NULL, "") == -EINVAL);
	CHECK(run(NULL, "\n") == -EINVAL);
	CHECK(run(NULL, "stop") == -EINVAL);
	CHECK(run(NULL, "kill NOSUCH") == -EINVAL);
	CHECK(run(NULL, "kill TERM now") == -EINVAL);
	CHECK(run(NULL, "timeout") == -EINVAL);
	CHECK(run(NULL, "timeout -1") == -EINVAL);
	CHECK(run(NULL, "timeout +5") == -EINVAL);
	CHECK(run(NULL, "timeout 4294967296") == -EINVAL);
	CHECK(run(NULL, "restart now") == -EINVAL);
	CHECK(run(NULL, "kill\nkill") == -EINVAL);
	CHECK(verb_run(VERBS(table), NULL, "kill\0", 5) == -EINVAL);
	CHECK(applied == 0);
	/* Applied: the row's function gets the verb and its value. */
	CHECK(run(&obj, "kill") == 0 && applied == 1 && last.sig == SIGTERM);
	CHECK(!strcmp(last_name, "kill"));
	CHECK(run(&obj, "kill SIGKILL") == 0 && last.sig == SIGKILL);
	CHECK(run(&obj, "kill 2") == 0 && last.sig == SIGINT);
	CHECK(run(&obj, "timeout 4294967295") == 0 && last.ms == 4294967295u);
	CHECK(run(&obj, "  restart\t\n") == 0 && !strcmp(last_name, "restart"));
	CHECK(run(&obj, "fails") == -ESRCH);
	CHECK(run(&obj, "bogus") == -EINVAL && applied == 6);
	return check_done();
}
