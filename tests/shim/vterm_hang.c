/* LD_PRELOAD shim for the integration tests: libvterm's vterm_input_write as it is, except that
 * a write holding "\x01SBXFS-HANG" never returns, as libvterm 0.1.4 did on REP with nothing to
 * repeat. It lets test_terms_abuse.py check the way out that does not depend on the filter: the
 * terminal is given up on, the rest of the mount answers, and SIGTERM still unmounts. */
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>
#include <vterm.h>

size_t vterm_input_write(VTerm *vt, const char *bytes, size_t len)
{
	size_t (*real)(VTerm *, const char *, size_t);

	if (memmem(bytes, len, "\x01SBXFS-HANG", 11))
		for (;;)
			pause();
	*(void **)&real = dlsym(RTLD_NEXT, "vterm_input_write");
	return real(vt, bytes, len);
}
