/* Fixed texts for libgit2 1.5's messages that quote a server (see giterr.h), found by the
 * format strings in libgit2.so.1.5 whose arguments come from a reply. */
#include "giterr.h"

#include <stddef.h>
#include <string.h>

static const struct {
	const char *prefix;
	const char *shown;
} quoting[] = {
    {"invalid content-type: ", "the server's reply has an unexpected content type"},
    {"cannot redirect from ", "the server redirected to a location that is not allowed"},
    {"remote error: ", "the server reported an error"},
    {"report-status: Error reported: ", "the server reported an error"},
    {"invalid hex digit in length: ", "the server's reply is not a git packet line"},
    {"failed to connect to ", "failed to connect to the server"},
    {"failed to resolve address for ", "failed to resolve the server's name"},
    {"user rejected certificate for ", "the server's certificate was rejected"},
    {"invalid reference name ", "the server sent an invalid reference name"},
    {"the given reference name ", "the server sent an invalid reference name"},
    {"could not use '", "the server sent an invalid reference name"},
    {"invalid initial branch ", "the server sent an invalid default branch"},
};

const char *giterr_shown(const char *msg)
{
	for (size_t i = 0; i < sizeof(quoting) / sizeof(quoting[0]); i++)
		if (!strncmp(msg, quoting[i].prefix, strlen(quoting[i].prefix)))
			return quoting[i].shown;
	return msg;
}
