/* Logging: one line per event to stderr (or the log file), level-filtered. */
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *log_prog = "sbxfs";
static enum log_level log_max = LOG_LVL_INFO;
static FILE *log_out;

void log_init(const char *progname, enum log_level level, FILE *out)
{
	log_prog = progname;
	log_max = level;
	log_out = out;
}

int log_level_parse(const char *s, enum log_level *level)
{
	static const char *names[] = {"error", "warn", "info", "debug"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(s, names[i]) == 0) {
			*level = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

static void log_vemit(enum log_level level, const char *fmt, va_list ap, const char *err)
{
	FILE *out = log_out ? log_out : stderr;
	char msg[1024];

	if (level > log_max)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* One fprintf per line keeps lines from different threads whole. */
	if (err)
		fprintf(out, "%s: %s: %s\n", log_prog, msg, err);
	else
		fprintf(out, "%s: %s\n", log_prog, msg);
	fflush(out);
}

void log_warn(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_LVL_WARN, fmt, ap, strerror(saved));
	va_end(ap);
	errno = saved;
}

void log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_LVL_WARN, fmt, ap, NULL);
	va_end(ap);
}

void log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_LVL_INFO, fmt, ap, NULL);
	va_end(ap);
}

void log_debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_LVL_DEBUG, fmt, ap, NULL);
	va_end(ap);
}

void fatal(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_LVL_ERROR, fmt, ap, strerror(saved));
	va_end(ap);
	exit(1);
}

void fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(LOG_LVL_ERROR, fmt, ap, NULL);
	va_end(ap);
	exit(1);
}
