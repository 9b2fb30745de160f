/* The seccomp rules that keep set-id bits out of the sandbox (see filter.h): a mode with
 * S_ISUID or S_ISGID is refused with EPERM wherever a call sets one (chmod and its variants,
 * creating opens, mknod), so nothing the sandbox writes can later run with its uid or gid on
 * the host. openat2 passes its mode in a struct a filter cannot read: it gets ENOSYS, and its
 * callers fall back to openat. mkdir needs no rule: Linux ignores set-id bits in its mode. */
#include "filter.h"

#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <sys/stat.h>

/* Linux 6.6's fchmodat2, older than these headers: the number is the same on every
 * architecture with the unified syscall table. */
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif

static const unsigned long setid_bits[] = {S_ISUID, S_ISGID};

/* Which argument holds the mode of the calls that always apply it. */
static const struct {
	int nr;
	unsigned arg;
} mode_calls[] = {
    {SCMP_SYS(chmod), 1}, {SCMP_SYS(fchmod), 1}, {SCMP_SYS(fchmodat), 2}, {SCMP_SYS(fchmodat2), 2},
    {SCMP_SYS(creat), 1}, {SCMP_SYS(mknod), 1},	 {SCMP_SYS(mknodat), 2},
};

/* Opens use their mode only when they create: O_CREAT, or O_TMPFILE (whose bits include
 * O_DIRECTORY, so only its own bit is tested). */
static const struct {
	int nr;
	unsigned flags_arg, mode_arg;
} open_calls[] = {
    {SCMP_SYS(open), 1, 2},
    {SCMP_SYS(openat), 2, 3},
};
static const unsigned long create_flags[] = {O_CREAT, O_TMPFILE & ~O_DIRECTORY};

static struct scmp_arg_cmp has_bits(unsigned arg, unsigned long bits)
{
	return (struct scmp_arg_cmp){arg, SCMP_CMP_MASKED_EQ, bits, bits};
}

static int add_open_rules(scmp_filter_ctx ctx, unsigned long bit)
{
	int rc = 0;

	for (size_t i = 0; i < sizeof(open_calls) / sizeof(open_calls[0]) && rc == 0; i++)
		for (size_t f = 0; f < 2 && rc == 0; f++)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), open_calls[i].nr, 2,
					      has_bits(open_calls[i].flags_arg, create_flags[f]),
					      has_bits(open_calls[i].mode_arg, bit));
	return rc;
}

int filter_add_setid_rules(scmp_filter_ctx ctx)
{
	int rc = 0;

	/* One rule per bit: a masked compare can only ask for all of its bits. */
	for (size_t b = 0; b < 2 && rc == 0; b++) {
		for (size_t i = 0; i < sizeof(mode_calls) / sizeof(mode_calls[0]) && rc == 0; i++)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), mode_calls[i].nr, 1,
					      has_bits(mode_calls[i].arg, setid_bits[b]));
		if (rc == 0)
			rc = add_open_rules(ctx, setid_bits[b]);
	}
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
	return rc;
}
