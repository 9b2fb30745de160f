/* Regular expressions whose matching costs time linear in the text: the POSIX extended syntax
 * (as glibc's regcomp takes it with REG_EXTENDED, in the C locale, plus its \w \W \s \S \b \B
 * \< \> \` \' escapes) without back-references, compiled to a Thompson NFA and run as a Pike VM
 * that only says whether a line matches. A search costs O(text length x program size), and both
 * are bounded, so no pattern can make it backtrack. */
#ifndef SBX_RX_H
#define SBX_RX_H

#include <stdbool.h>
#include <stddef.h>

/* Bytes of a pattern, and instructions of its program once its bounds are expanded: past
 * either, rx_compile refuses it. */
#define RX_PATTERN_MAX 256u
#define RX_PROG_MAX    1024u
/* The largest m or n of x{m,n}, as POSIX's RE_DUP_MAX. */
#define RX_DUP_MAX 255u

struct rx;

/* 0, or -EINVAL for bad syntax, a back-reference (\1 to \9), a NUL byte, or a pattern over the
 * bounds above. */
int rx_compile(const char *pattern, size_t len, struct rx **out);
/* Whether some part of text (a line: no newline in it) matches. */
bool rx_search(const struct rx *rx, const char *text, size_t len);
void rx_free(struct rx *rx);

#endif
