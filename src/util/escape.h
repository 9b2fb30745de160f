/* One reversible text form for values that may hold any byte but NUL (env values, paths), so a
 * control file shows each on one line and no value can forge another line.
 *
 * A value is shown as is, unless it holds a control byte (0x01-0x1f, 0x7f) or starts with $' :
 * then it is shown in bash's ANSI-C quoting, $'...', with \\ for a backslash, \' for a quote,
 * \n \t \r for those bytes and \xHH (two lowercase hex digits) for every other control byte.
 * Reading $'...' back also takes \a \b \e \f \v \" and \xH. */
#ifndef SBX_ESCAPE_H
#define SBX_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The shown form of v (NUL-terminated, length in *outlen); v must hold no NUL. Caller frees. */
char *esc_encode(const char *v, size_t len, size_t *outlen);
/* The value a shown (or written) form stands for, NUL-terminated, into *out (caller frees).
 * -EINVAL for a NUL or newline, a malformed $'...' or one that decodes to a NUL. */
int esc_decode(const char *in, size_t len, char **out, size_t *outlen);
/* A status text with the line "error VALUE" added when error is not NULL (VALUE in the shown
 * form: it may quote what a user wrote). Takes text and error; caller frees the result. */
char *esc_status_error(char *text, char *error);
/* A log field as written: v with every byte outside printable ASCII, and %, as %HH (uppercase
 * hex), and a space too unless spaces is set (the line's last field, its rest). Caller frees. */
char *esc_percent(const char *v, bool spaces);
/* The value of one hex digit, -1 if c is none. */
int esc_hexval(char c);
/* For fuzzers: data without NUL encodes to one line that decodes back to data; anything decodes
 * without error or to -EINVAL, and a decoded value re-encodes and decodes to itself. Returns 0,
 * or -1 on a broken invariant. */
int esc_roundtrip(const uint8_t *data, size_t size);

#endif
