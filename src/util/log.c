/* Logging: one line per event to stderr (or the log file, rotated at a size), level-filtered. */
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>

#include "xmalloc.h"

static const char *log_prog = "sbxfs";
static enum log_level log_max = LOG_LVL_INFO;
static FILE *log_out;
/* The log file's rotation: its path, its bound in bytes (0: none) and its size so far. The
 * mutex keeps a line and the rotation before it together across threads. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char *log_path;
static unsigned long long log_limit, log_size;
static bool log_to_syslog;

void log_init(const char *progname, enum log_level level, FILE *out)
{
	log_prog = progname;
	log_max = level;
	log_out = out;
}

int log_open_file(const char *progname, enum log_level level, const char *path,
		  unsigned long long max)
{
	FILE *f = fopen(path, "a");
	struct stat st;

	if (!f)
		return -errno;
	log_init(progname, level, f);
	log_path = xstrdup(path);
	log_limit = max;
	log_size = fstat(fileno(f), &st) == 0 ? (unsigned long long)st.st_size : 0;
	return 0;
}

/* The file becomes PATH.1 (replacing the one before) and a new one starts; if it cannot be
 * opened, lines go to stderr. Under log_mu. */
static void rotate(void)
{
	char *old = xasprintf("%s.1", log_path);

	fclose(log_out);
	rename(log_path, old);
	free(old);
	log_out = fopen(log_path, "a");
	log_size = 0;
}

static void emit_line(const char *line, size_t len)
{
	pthread_mutex_lock(&log_mu);
	if (log_out && log_limit && log_size > 0 && log_size + len > log_limit)
		rotate();
	fputs(line, log_out ? log_out : stderr);
	fflush(log_out ? log_out : stderr);
	log_size += len;
	pthread_mutex_unlock(&log_mu);
}

void log_open_syslog(const char *progname, enum log_level level)
{
	log_init(progname, level, NULL);
	openlog(progname, LOG_PID | LOG_NDELAY, LOG_DAEMON);
	log_to_syslog = true;
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
	char msg[1024], line[1400];
	int len;

	if (level > log_max)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (log_to_syslog) {
		static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};

		if (err)
			syslog(prio[level], "%s: %s", msg, err);
		else
			syslog(prio[level], "%s", msg);
		return;
	}
	if (err)
		len = snprintf(line, sizeof(line), "%s: %s: %s\n", log_prog, msg, err);
	else
		len = snprintf(line, sizeof(line), "%s: %s\n", log_prog, msg);
	if (len >= (int)sizeof(line)) { /* cut short: it still ends the line */
		len = sizeof(line) - 1;
		line[len - 1] = '\n';
	}
	emit_line(line, (size_t)len);
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
