/* Unit tests: libgit2 messages that quote a server become fixed texts (giterr.h). */
#include <string.h>

#include "check.h"
#include "giterr.h"

static bool shown_is(const char *msg, const char *want)
{
	return !strcmp(giterr_shown(msg), want);
}

int main(void)
{
	CHECK(shown_is("invalid content-type: 'text/x-secret; token=abc'",
		       "the server's reply has an unexpected content type"));
	CHECK(shown_is("remote error: access denied: internal.db password=x",
		       "the server reported an error"));
	CHECK(shown_is("cannot redirect from 'http://a/x' to 'http://b/y?secret'",
		       "the server redirected to a location that is not allowed"));
	CHECK(shown_is("invalid hex digit in length: '+OK '",
		       "the server's reply is not a git packet line"));
	CHECK(shown_is("failed to connect to evil.example", "failed to connect to the server"));
	CHECK(shown_is("failed to resolve address for x: Name or service not known",
		       "failed to resolve the server's name"));
	CHECK(shown_is("the given reference name 'refs/heads/a..b' is not valid",
		       "the server sent an invalid reference name"));
	CHECK(shown_is("invalid initial branch 'x'", "the server sent an invalid default branch"));
	/* kept: fixed texts and numbers */
	CHECK(shown_is("unexpected http status code: 404", "unexpected http status code: 404"));
	CHECK(shown_is("http parser error: invalid constant string",
		       "http parser error: invalid constant string"));
	CHECK(shown_is("early EOF", "early EOF"));
	CHECK(shown_is("", ""));
	return check_done();
}
