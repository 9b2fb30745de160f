/* zstd streams, when sbxfs is built with libzstd: an archive read out compressed, an import
 * that arrives compressed (told by zstd's magic number). Without libzstd, snap_zstd_built says
 * so and the streams fail with EOPNOTSUPP. */
#ifndef SBX_ZSTREAM_H
#define SBX_ZSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The first bytes of every zstd frame. */
#define ZSTD_MAGIC "\x28\xb5\x2f\xfd"

bool snap_zstd_built(void);

struct zout;
/* Compressing what fill gives (its bytes into buf, 0 at the end, or -errno). */
struct zout *zout_new(ssize_t (*fill)(void *arg, char *buf, size_t size), void *arg);
/* Up to size compressed bytes: how many (0 at the end), or -errno. */
ssize_t zout_read(struct zout *z, char *buf, size_t size);
void zout_free(struct zout *z);

struct zin;
/* Decompressing into sink (0 or -errno, which stops it). */
struct zin *zin_new(int (*sink)(void *arg, const char *buf, size_t len), void *arg);
/* Feeds compressed bytes: 0, or -EINVAL for a corrupt stream, or sink's error. */
int zin_feed(struct zin *z, const char *buf, size_t len);
/* Whether the stream ended where a frame ends: 0 or -EINVAL. */
int zin_end(struct zin *z);
void zin_free(struct zin *z);

#endif
