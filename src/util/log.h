/* Logging in the OpenBSD daemon style: log_warn appends strerror(errno), fatal exits. */
#ifndef SBX_LOG_H
#define SBX_LOG_H

#include <stdio.h>

enum log_level { LOG_LVL_ERROR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

void log_init(const char *progname, enum log_level level, FILE *out);
/* Logs to the file at path (appended); once it would pass max bytes (0: no bound), it becomes
 * path.1 and a new one starts. -errno if it cannot be opened. */
int log_open_file(const char *progname, enum log_level level, const char *path,
		  unsigned long long max);
/* Logs to syslog (facility daemon) from now on. */
void log_open_syslog(const char *progname, enum log_level level);
int log_level_parse(const char *s, enum log_level *level);
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
