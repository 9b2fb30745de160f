/* Unit tests: checkout request lines, repository names, and where a clone may land. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "checkout.h"

static int parse(const char *s, struct checkout_req *r)
{
	return checkout_parse(s, strlen(s), r);
}

static void test_parse(void)
{
	struct checkout_req r;

	CHECK(parse("https://h/a/b.git\n", &r) == 0);
	CHECK(!strcmp(r.url, "https://h/a/b.git") && !r.branch && !r.dir && r.depth == 0);
	checkout_req_free(&r);
	CHECK(parse("/src/repo branch=dev dir=x/y depth=3", &r) == 0);
	CHECK(!strcmp(r.branch, "dev") && !strcmp(r.dir, "x/y") && r.depth == 3);
	checkout_req_free(&r);
	CHECK(parse("", &r) == -EINVAL);
	CHECK(parse("url foo=bar", &r) == -EINVAL);
	CHECK(parse("url branch=", &r) == -EINVAL);
	CHECK(parse("url depth=0", &r) == -EINVAL);
	CHECK(parse("url depth=x", &r) == -EINVAL);
	CHECK(parse("url branch=a branch=b", &r) == -EINVAL);
	CHECK(parse("--upload-pack=evil", &r) == -EINVAL);
	CHECK(parse("url branch=-x", &r) == -EINVAL);
	CHECK(parse("url\nsecond line", &r) == -EINVAL);
	/* found by fuzz_checkout: a line of blanks has no URL (it crashed on strdup(NULL)) */
	CHECK(parse("\t", &r) == -EINVAL);
	CHECK(parse(" \t \n", &r) == -EINVAL);
}

static void check_name(const char *url, const char *want)
{
	char *got = checkout_repo_name(url);

	CHECK(want ? got && !strcmp(got, want) : got == NULL);
	free(got);
}

static void test_names(void)
{
	check_name("https://h/a/b.git", "b");
	check_name("https://h/a/b/", "b");
	check_name("git@host:org/proj.git", "proj");
	check_name("/srv/repos/x", "x");
	check_name("https://h/..", NULL);
	check_name("", NULL);
}

static void check_resolve(const char *cwd, const char *dir, const char *want)
{
	char *got = checkout_resolve("/workspace", cwd, dir);

	CHECK(want ? got && !strcmp(got, want) : got == NULL);
	free(got);
}

static void test_resolve(void)
{
	check_resolve("/workspace", "r", "r");
	check_resolve("/workspace/a", "b/c", "a/b/c");
	check_resolve("/workspace/a", "../r", "r");
	check_resolve("/workspace/a", "./x/../y", "a/y");
	check_resolve("/workspace", "/workspace/z", "z");
	check_resolve("/workspace", ".", "");
	check_resolve("/workspace", "..", NULL);
	check_resolve("/workspace", "../etc", NULL);
	check_resolve("/workspace", "/etc", NULL);
	check_resolve("/workspace", "/workspacex/y", NULL);
	check_resolve("/tmp", "r", NULL);
	check_resolve("/", "../../..", NULL);
}

static void check_source(const char *cwd, const char *url, const char *want)
{
	char *got = checkout_source_in(cwd, url);

	CHECK(want ? got && !strcmp(got, want) : got == NULL);
	free(got);
}

/* A plain relative path is the session's, as dir= is; every other source is left alone. */
static void test_source(void)
{
	check_source("/workspace", "repos/x.git", "/workspace/repos/x.git");
	check_source("/workspace/a", "../r", "/workspace/a/../r");
	check_source("/", "r", "/r");
	check_source("/workspace", "/srv/x.git", NULL);
	check_source("/workspace", "file:///srv/x.git", NULL);
	check_source("/workspace", "https://h/x.git", NULL);
	check_source("/workspace", "git@host:org/x.git", NULL);
	check_source("/workspace", "", NULL);
}

int main(void)
{
	test_parse();
	test_names();
	test_resolve();
	test_source();
	return check_done();
}
