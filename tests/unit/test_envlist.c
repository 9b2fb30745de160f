/* Unit tests: env names, env edit lines, and env lists. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "envlist.h"

static int parse(const char *s, struct envedits *ed)
{
	return envedits_parse(s, strlen(s), ed);
}

static void test_names(void)
{
	CHECK(env_name_valid("PATH", 4));
	CHECK(env_name_valid("_x1", 3));
	CHECK(!env_name_valid("1X", 2));
	CHECK(!env_name_valid("", 0));
	CHECK(!env_name_valid("A-B", 3));
	CHECK(!env_name_valid("A B", 3));
}

static void test_edits(void)
{
	struct envedits ed;

	CHECK(parse("A=1\n-B\nC=x=y\n\nD=\n", &ed) == 0);
	CHECK(ed.n == 4);
	CHECK(!strcmp(ed.e[0].name, "A") && !strcmp(ed.e[0].value, "1"));
	CHECK(!strcmp(ed.e[1].name, "B") && ed.e[1].value == NULL);
	CHECK(!strcmp(ed.e[2].name, "C") && !strcmp(ed.e[2].value, "x=y"));
	CHECK(!strcmp(ed.e[3].name, "D") && !strcmp(ed.e[3].value, ""));
	envedits_free(&ed);

	CHECK(parse("A=1", &ed) == 0 && ed.n == 1); /* no final newline */
	envedits_free(&ed);
	CHECK(parse("A=1\n1X=2\n", &ed) == -EINVAL && ed.n == 0);
	CHECK(parse("=x\n", &ed) == -EINVAL);
	CHECK(parse("FOO\n", &ed) == -EINVAL);
	CHECK(parse("-1X\n", &ed) == -EINVAL);
	CHECK(parse("-\n", &ed) == -EINVAL);
	CHECK(envedits_parse("A=1\0\n", 5, &ed) == -EINVAL);
}

static void test_list(void)
{
	struct envlist el;
	struct envedits ed;
	size_t len;
	char *text;

	envlist_init(&el);
	envlist_set(&el, "A", "1");
	envlist_set(&el, "B", "2");
	envlist_set(&el, "A", "3");
	CHECK(el.n == 2);
	CHECK(!strcmp(envlist_get(&el, "A"), "3"));
	CHECK(envlist_get(&el, "AB") == NULL);
	CHECK(parse("-A\nC=x y\n", &ed) == 0);
	envlist_apply(&el, &ed);
	envedits_free(&ed);
	text = envlist_format(&el, &len);
	CHECK(!strcmp(text, "B=2\nC=x y\n") && len == strlen(text));
	free(text);
	CHECK(el.v[el.n] == NULL);
	envlist_free(&el);
}

/* Bounds count NAME=VALUE and its NUL; a write that shrinks an env over its bound passes. */
static void test_bounds(void)
{
	struct envlist el;
	struct envedits ed;

	envlist_init(&el);
	envlist_set(&el, "A", "123");
	CHECK(envlist_bytes(&el) == 6);
	CHECK(parse("B=1234\n", &ed) == 0);
	CHECK(envlist_check_edits(&el, &ed, 7, 100) == 0);
	CHECK(envlist_check_edits(&el, &ed, 6, 100) == -EFBIG);
	CHECK(envlist_check_edits(&el, &ed, 100, 12) == -EFBIG);
	CHECK(envlist_check_edits(&el, &ed, 100, 13) == 0);
	envedits_free(&ed);
	CHECK(parse("-A\nB=1\n", &ed) == 0);
	CHECK(envlist_check_edits(&el, &ed, 100, 1) == 0); /* over, but smaller than before */
	envedits_free(&ed);
	CHECK(!envedit_partial_too_big("B=12345", 7, 8));
	CHECK(envedit_partial_too_big("B=123456", 8, 8));
	CHECK(!envedit_partial_too_big("B=$'\\x41\\x41", 12, 8));
	CHECK(!envedit_partial_too_big("-B", 2, 1));
	envlist_free(&el);
}

int main(void)
{
	test_bounds();
	test_names();
	test_edits();
	test_list();
	return check_done();
}
