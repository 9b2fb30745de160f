/* UTF-8 encoding of one code point, shared by whatever turns code points back into text. */
#ifndef SBX_UTF8_H
#define SBX_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Writes c as UTF-8 to out (room for 4 bytes), U+FFFD for a surrogate or anything past
 * U+10FFFF; returns how many bytes. */
size_t utf8_put(char *out, uint32_t c);

#endif
