/* Unit tests: linear-time regular expressions (src/util/rx.c) agree with glibc's regexec on the
 * patterns both take, refuse back-references, and stay fast on the patterns that make a
 * backtracking matcher take seconds. */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "rx.h"

static bool search(const char *pattern, const char *text)
{
	struct rx *rx;
	bool m;

	if (rx_compile(pattern, strlen(pattern), &rx) < 0)
		return false;
	m = rx_search(rx, text, strlen(text));
	rx_free(rx);
	return m;
}

static bool compiles(const char *pattern)
{
	struct rx *rx;
	int rc = rx_compile(pattern, strlen(pattern), &rx);

	rx_free(rx);
	return rc == 0;
}

/* Both compile it and agree on each text. */
static void same_as_glibc(const char *pattern, const char *const *texts)
{
	regex_t re;
	bool ok = regcomp(&re, pattern, REG_EXTENDED | REG_NEWLINE) == 0;

	CHECK(ok);
	CHECK(compiles(pattern));
	for (; ok && *texts; texts++) {
		bool want = regexec(&re, *texts, 0, NULL, 0) == 0;

		if (search(pattern, *texts) != want) {
			fprintf(stderr, "pattern %s on %s: glibc says %d\n", pattern, *texts, want);
			CHECK(false);
		}
	}
	if (ok)
		regfree(&re);
}

static void test_agrees_with_glibc(void)
{
	static const char *const texts[] = {
	    "",	    "a",     "ab", "abc", "aaa",	"ba",	     "a b",    "$ ",
	    ">>> ", "x-y_z", "]",  "-",	  "result: 42", "Password:", "a)",     "\\]",
	    "aab",  "abab",  "{",  "éa",  "tab\t",	"A1",	     "xxxxxx", NULL};
	static const char *const patterns[] = {
	    "a",
	    "^a",
	    "a$",
	    "^$",
	    "ab|c",
	    "(ab)+",
	    "a*",
	    "a+b",
	    "a?b",
	    "a{2}",
	    "a{1,2}b",
	    "a{,2}",
	    "a{2,}",
	    "x{2}{3}",
	    "[abc]",
	    "[^a]",
	    "[a-c]+",
	    "[]a]",
	    "[^]a]",
	    "[a-]",
	    "[--/]",
	    "[[:alpha:]]+$",
	    "[[:digit:]]",
	    "[[:space:]]",
	    "[[:punct:]]",
	    "[[=a=]b]",
	    "[[.-.]]",
	    "[a-[.c.]]",
	    ".",
	    "^.$",
	    "\\.",
	    "\\$ $",
	    "^>>> ",
	    "\\$ ",
	    "()",
	    "(|a)",
	    "a|",
	    "|a",
	    "a||b",
	    "(a|)b",
	    "a**",
	    "a+*",
	    "\\w+",
	    "\\W",
	    "\\s",
	    "\\S+",
	    "\\<a",
	    "a\\>",
	    "\\ba",
	    "\\Ba",
	    "\\`a",
	    "b\\'",
	    "a)",
	    ")",
	    "\\d",
	    "[\\]]",
	    "\\{",
	    "\\(",
	    "$a",
	    "a^",
	    "(^a)",
	    "x(^a)",
	    "^result: [0-9]+$",
	    "^Password:",
	    "((a*)*)*b",
	    "(a|b)*abb",
	    "a{0}",
	    "(a{1,3}){2}",
	    "[[:upper:][:digit:]]",
	    "\\t",
	    "é",
	    "[^[:alnum:]_-]",
	};

	for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++)
		same_as_glibc(patterns[i], texts);
}

static void test_refused(void)
{
	static const char *const bad[] = {"*a",
					  "+a",
					  "?",
					  "{1}",
					  "a{",
					  "a{1",
					  "a{x}",
					  "a{2,1}",
					  "a{}",
					  "^*",
					  "$*",
					  "\\b*",
					  "(*a)",
					  "a|*",
					  "\\",
					  "[a",
					  "[]",
					  "[z-a]",
					  "[a-c-e]",
					  "[[:foo:]]",
					  "[[:alpha:]-z]",
					  "[[.ab.]]",
					  "((a)",
					  "(a)\\1",
					  "\\1",
					  "((a*)*)*\\2\\1b",
					  "^(.*)(.*)\\2\\1$",
					  "a{256}",
					  NULL};
	char big[RX_PATTERN_MAX + 2];

	for (const char *const *p = bad; *p; p++) {
		if (compiles(*p)) {
			fprintf(stderr, "pattern %s was taken\n", *p);
			CHECK(false);
		}
	}
	CHECK(!compiles("(a|b){255}(c|d){255}")); /* expands past RX_PROG_MAX */
	CHECK(compiles("a{255}"));
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK(!compiles(big));
	big[RX_PATTERN_MAX] = '\0';
	CHECK(compiles(big));
	{
		struct rx *rx;

		CHECK(rx_compile("a\0b", 3, &rx) == -EINVAL && !rx);
	}
}

static double seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The patterns that took glibc seconds (with their back-references taken out, as those are
 * refused) cost microseconds per line here. */
static void test_linear(void)
{
	static const char *const slow[] = {"((a*)*)*b",	    "^(.*)(.*)(.*)(.*)$",
					   "(a|a)*(a|a)*c", "(a*)*(a*)*(a*)*x",
					   "(.*a){12}",	    NULL};
	char line[4097];
	double t0, took;

	memset(line, 'a', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\0';
	t0 = seconds();
	for (const char *const *p = slow; *p; p++)
		CHECK(search(*p, line) ==
		      (strcmp(*p, "^(.*)(.*)(.*)(.*)$") == 0 || strcmp(*p, "(.*a){12}") == 0));
	took = seconds() - t0;
	if (took > 1.0)
		fprintf(stderr, "5 searches of a 4096-byte line took %.3f s\n", took);
	CHECK(took < 1.0);
}

int main(void)
{
	test_agrees_with_glibc();
	test_refused();
	test_linear();
	return check_done();
}
