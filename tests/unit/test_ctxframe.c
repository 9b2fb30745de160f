/* Unit tests: the driver's frames (src/context/context_frame.c): events parsed strictly, bad ones
 * refused, RFC 8259's numbers and nothing looser, a displayed JSON value written again rather
 * than kept as sent, the reader's bounds on a pipe. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "context_frame.h"

static int parse(const char *s, struct ctx_event *ev)
{
	return ctx_event_parse(s, strlen(s), ev);
}

static bool refused(const char *s)
{
	struct ctx_event ev;

	return parse(s, &ev) == -EPROTO;
}

static void test_events(void)
{
	struct ctx_event ev;

	CHECK(parse("{\"ev\": \"ready\", \"language\": \"python\", \"version\": \"3.11\"}", &ev) ==
	      0);
	CHECK(ev.ev == EV_READY);
	ctx_event_free(&ev);
	CHECK(parse("{\"ev\":\"done\"}", &ev) == 0 && ev.ev == EV_DONE);
	ctx_event_free(&ev);

	CHECK(parse("{\"ev\":\"result\",\"main\":true,\"data\":{\"text/plain\":\"4\\u00e9\\n\","
		    "\"image/png\":\"iVBO\",\"application/json\":{\"a\":[1,2.5e3,null]},"
		    "\"x/unknown\":[1]}}",
		    &ev) == 0);
	CHECK(ev.ev == EV_RESULT && ev.main);
	CHECK(ev.data[0] && !strcmp(ev.data[0], "4\xc3\xa9\n") && ev.datalen[0] == 4);
	CHECK(ev.data[4] && !strcmp(ev.data[4], "iVBO"));
	CHECK(ev.data[7] && !strcmp(ev.data[7], "{\"a\":[1,2.5e3,null]}"));
	CHECK(!ev.data[1]);
	ctx_event_free(&ev);

	CHECK(parse("{\"ev\":\"error\",\"name\":\"E\",\"value\":\"v\\ud83d\\ude00\",\"traceback\":"
		    "\"t\\\"\\\\\"}",
		    &ev) == 0);
	CHECK(ev.ev == EV_ERROR && !strcmp(ev.name, "E") && !strcmp(ev.value, "v\xf0\x9f\x98\x80"));
	CHECK(!strcmp(ev.traceback, "t\"\\"));
	ctx_event_free(&ev);
}

static void test_refused(void)
{
	CHECK(refused(""));
	CHECK(refused("{}"));
	CHECK(refused("[]"));
	CHECK(refused("{\"ev\":\"launch\"}"));
	CHECK(refused("{\"ev\":\"done\"} x"));
	CHECK(refused("{\"ev\":\"done\",}"));
	CHECK(refused("{\"ev\":\"error\",\"name\":\"E\"}")); /* no value, no traceback */
	CHECK(refused("{\"ev\":\"result\",\"data\":{\"text/plain\":1}}"));
	CHECK(refused("{\"ev\":\"result\",\"main\":1}"));
	CHECK(refused("{\"ev\":\"done\",\"x\":\"\xff\"}"));	  /* not UTF-8 */
	CHECK(refused("{\"ev\":\"done\",\"x\":\"\\ud800\"}"));	  /* a lone surrogate */
	CHECK(refused("{\"ev\":\"done\",\"x\":\"a\nb\"}"));	  /* a raw control byte */
	CHECK(refused("{\"ev\":\"done\",\"x\":\"\\q\"}"));
	CHECK(refused("{\"ev\":\"done\",\"x\":tru}"));
	CHECK(refused("{\"ev\":\"done\",\"x\":-}"));
	CHECK(refused("{\"ev\":\"done\""));

	/* Nesting is bounded: far deeper than any display value needs is refused, not recursed. */
	size_t depth = 10000, len = 0;
	char *deep = malloc(2 * depth + 64);

	len += (size_t)sprintf(deep, "{\"ev\":\"done\",\"x\":");
	for (size_t i = 0; i < depth; i++)
		deep[len++] = '[';
	for (size_t i = 0; i < depth; i++)
		deep[len++] = ']';
	deep[len++] = '}';
	deep[len] = '\0';
	CHECK(refused(deep));
	free(deep);
}

/* The application/json value a result frame with `json` as that value keeps, or NULL if the
 * frame is refused; caller frees. */
static char *kept_json(const char *json)
{
	char *frame = malloc(strlen(json) + 64), *kept = NULL;
	struct ctx_event ev;

	sprintf(frame, "{\"ev\":\"result\",\"data\":{\"application/json\":%s}}", json);
	if (parse(frame, &ev) == 0) {
		kept = strdup(ev.data[7]);
		CHECK(strlen(kept) == ev.datalen[7]);
		ctx_event_free(&ev);
	}
	free(frame);
	return kept;
}

static bool keeps(const char *json, const char *want)
{
	char *kept = kept_json(json);
	bool same = kept && !strcmp(kept, want);

	if (!same)
		fprintf(stderr, "%s: kept %s, want %s\n", json, kept ? kept : "(refused)", want);
	free(kept);
	return same;
}

static bool json_refused(const char *json)
{
	char *kept = kept_json(json);

	if (kept)
		fprintf(stderr, "%s: kept as %s, want refused\n", json, kept);
	free(kept);
	return !kept;
}

static void test_numbers(void)
{
	static const char *const good[] = {
	    "0",   "-0",  "1",	 "-1",	 "10",	 "1.5",	    "-0.0",
	    "0e0", "1e5", "1E5", "1e+5", "1E-5", "2.5e003", "-1.25e+10",
	};
	/* Any size is a number: kept exactly, for the reader to make of it what it can. */
	static const char *const huge[] = {
	    "1e999999999999",
	    "-1e-999999999999",
	    "123456789012345678901234567890.000000000001",
	};
	static const char *const bad[] = {
	    "01",   "-01",	  "00",	       "01e+-5", "+1",	      "-",	  "--1",
	    "1.",   ".5",	  "-.5",       "1.e5",	 "1e",	      "1E",	  "1e+",
	    "1e-",  "1e+-5",	  "1e--5",     "1e5.0",	 "1.5.2",     "0x10",	  "1_000",
	    "NaN",  "Infinity",	  "-Infinity", "nan",	 "1 2",	      "[1,]",	  "[,1]",
	    "[01]", "{\"a\":01}", "- 1",       "1e 5",	 "\"\\x41\"", "\"a\nb\"",
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK(keeps(good[i], good[i]));
	for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++)
		CHECK(keeps(huge[i], huge[i]));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(json_refused(bad[i]));
	/* A number elsewhere in a frame is held to the same grammar. */
	CHECK(refused("{\"ev\":\"done\",\"x\":01e+-5}"));
	CHECK(refused("{\"ev\":\"done\",\"x\":[1.]}"));
}

static void test_json_written_again(void)
{
	/* Compact: whitespace between tokens goes; numbers and literals stay as they are. */
	CHECK(keeps(" { \"a\" : [ 1 , 2.5E+3 , null , true , false ] ,\"b\":{ } , \"c\":[ ] } ",
		    "{\"a\":[1,2.5E+3,null,true,false],\"b\":{},\"c\":[]}"));
	/* Strings are decoded and escaped again by the writer, whatever the sender escaped. */
	CHECK(keeps("\"\\u0041\\/\\u00e9\\ud83d\\ude00\"", "\"A/\xc3\xa9\xf0\x9f\x98\x80\""));
	CHECK(keeps("\"\\u0000\\u001f\\t\\u007f\\u2028\"", "\"\\u0000\\u001f\\t\\u007f\\u2028\""));
	CHECK(keeps("{\"k\\u0022\":\"\\\\\"}", "{\"k\\\"\":\"\\\\\"}"));
	/* A key given twice stays twice: the value is written as it was sent, not merged. */
	CHECK(keeps("{\"a\":1,\"a\":2}", "{\"a\":1,\"a\":2}"));
}

static int frame(int fd, const char *body, uint32_t len)
{
	unsigned char head[4] = {len >> 24, len >> 16, len >> 8, len};

	return write(fd, head, 4) == 4 && write(fd, body, strlen(body)) == (ssize_t)strlen(body)
		   ? 0
		   : -1;
}

static void test_reader(void)
{
	struct ctx_reader r = {0};
	struct ctx_event ev;
	int p[2];

	CHECK(pipe2(p, O_NONBLOCK) == 0);
	CHECK(ctx_reader_step(&r, p[0], &ev) == 0); /* nothing yet */
	CHECK(write(p[1], "\0\0", 2) == 2);
	CHECK(ctx_reader_step(&r, p[0], &ev) == 0); /* half a head */
	CHECK(write(p[1], "\0\015{\"ev\":", 8) == 8);
	CHECK(ctx_reader_step(&r, p[0], &ev) == 0); /* half a body */
	CHECK(write(p[1], "\"done\"}", 7) == 7);
	CHECK(ctx_reader_step(&r, p[0], &ev) == 1 && ev.ev == EV_DONE);
	ctx_event_free(&ev);
	CHECK(frame(p[1], "{\"ev\":1}", 8) == 0);
	CHECK(ctx_reader_step(&r, p[0], &ev) == -EPROTO);
	CHECK(frame(p[1], "", CTX_FRAME_MAX + 1) == 0);
	CHECK(ctx_reader_step(&r, p[0], &ev) == -EMSGSIZE);
	ctx_reader_free(&r);
	close(p[1]);
	CHECK(ctx_reader_step(&r, p[0], &ev) == -EPIPE);
	close(p[0]);
}

int main(void)
{
	test_events();
	test_refused();
	test_numbers();
	test_json_written_again();
	test_reader();
	return check_done();
}
