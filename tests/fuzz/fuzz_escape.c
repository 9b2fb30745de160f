/* Fuzz target: the $'...' text form of values (src/util/escape.c), which env files and the cwd file
 * show and take back. Properties: escape.h's round trip (esc_roundtrip), an encoded form holds no
 * control byte at all, and a form not starting with $' decodes to itself. */
#include <errno.h>

#include "escape.h"
#include "fuzz.h"

static void check_encoding(const char *v, size_t len)
{
	size_t elen;
	char *enc;

	if (memchr(v, '\0', len))
		return;
	enc = esc_encode(v, len, &elen);
	FUZZ_ASSERT(strlen(enc) == elen);
	for (size_t i = 0; i < elen; i++)
		FUZZ_ASSERT((unsigned char)enc[i] >= 0x20 && enc[i] != 0x7f);
	free(enc);
}

static void check_decoding(const char *in, size_t len)
{
	size_t dlen;
	char *dec;
	int rc = esc_decode(in, len, &dec, &dlen);

	FUZZ_ASSERT(rc == 0 || rc == -EINVAL);
	if (rc < 0) {
		FUZZ_ASSERT(memchr(in, '\0', len) || memchr(in, '\n', len) ||
			    (len >= 2 && in[0] == '$' && in[1] == '\''));
		return;
	}
	FUZZ_ASSERT(strlen(dec) == dlen);
	if (len < 2 || in[0] != '$' || in[1] != '\'')
		FUZZ_ASSERT(fuzz_same(dec, dlen, in, len));
	else
		FUZZ_ASSERT(dlen <= len - 3);
	free(dec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size);

	FUZZ_ASSERT(esc_roundtrip((const uint8_t *)s, size) == 0);
	check_encoding(s, size);
	check_decoding(s, size);
	free(s);
	return 0;
}
