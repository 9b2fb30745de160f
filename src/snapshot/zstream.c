/* zstd streams (see zstream.h), or their absence without libzstd. */
#include "zstream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

#ifdef HAVE_ZSTD
#include <zstd.h>

/* Fast, and still a third of a tree's size for source code. */
#define ZSTD_LEVEL 3

struct zout {
	ZSTD_CStream *cs;
	ssize_t (*fill)(void *arg, char *buf, size_t size);
	void *arg;
	char *in, *out;
	size_t incap, inlen, inpos, outcap, outlen, outpos;
	bool eof, ended;
};

bool snap_zstd_built(void)
{
	return true;
}

struct zout *zout_new(ssize_t (*fill)(void *arg, char *buf, size_t size), void *arg)
{
	struct zout *z = xcalloc(1, sizeof(*z));

	z->cs = ZSTD_createCStream();
	if (!z->cs)
		abort(); /* out of memory, as xmalloc */
	ZSTD_CCtx_setParameter(z->cs, ZSTD_c_compressionLevel, ZSTD_LEVEL);
	z->fill = fill;
	z->arg = arg;
	z->incap = ZSTD_CStreamInSize();
	z->outcap = ZSTD_CStreamOutSize();
	z->in = xmalloc(z->incap);
	z->out = xmalloc(z->outcap);
	return z;
}

/* Compresses more into out: 0, or -errno. */
static int compress_more(struct zout *z)
{
	ZSTD_outBuffer ob = {z->out, z->outcap, 0};
	ZSTD_inBuffer ib;
	size_t rc;

	if (z->inpos == z->inlen && !z->eof) {
		ssize_t n = z->fill(z->arg, z->in, z->incap);

		if (n < 0)
			return (int)n;
		z->inlen = (size_t)n;
		z->inpos = 0;
		z->eof = n == 0;
	}
	ib = (ZSTD_inBuffer){z->in, z->inlen, z->inpos};
	rc = ZSTD_compressStream2(z->cs, &ob, &ib, z->eof ? ZSTD_e_end : ZSTD_e_continue);
	if (ZSTD_isError(rc))
		return -EIO;
	z->inpos = ib.pos;
	z->outlen = ob.pos;
	z->outpos = 0;
	z->ended = z->eof && rc == 0;
	return 0;
}

ssize_t zout_read(struct zout *z, char *buf, size_t size)
{
	size_t done = 0;
	int rc;

	while (done < size) {
		if (z->outpos < z->outlen) {
			size_t n = z->outlen - z->outpos < size - done ? z->outlen - z->outpos
								       : size - done;

			memcpy(buf + done, z->out + z->outpos, n);
			z->outpos += n;
			done += n;
			continue;
		}
		if (z->ended)
			break;
		if ((rc = compress_more(z)) < 0)
			return done ? (ssize_t)done : rc;
	}
	return (ssize_t)done;
}

void zout_free(struct zout *z)
{
	ZSTD_freeCStream(z->cs);
	free(z->in);
	free(z->out);
	free(z);
}

struct zin {
	ZSTD_DStream *ds;
	int (*sink)(void *arg, const char *buf, size_t len);
	void *arg;
	char *out;
	size_t outcap;
	size_t hint; /* 0 once the last frame is whole */
};

struct zin *zin_new(int (*sink)(void *arg, const char *buf, size_t len), void *arg)
{
	struct zin *z = xcalloc(1, sizeof(*z));

	z->ds = ZSTD_createDStream();
	if (!z->ds)
		abort();
	z->sink = sink;
	z->arg = arg;
	z->outcap = ZSTD_DStreamOutSize();
	z->out = xmalloc(z->outcap);
	z->hint = 1;
	return z;
}

int zin_feed(struct zin *z, const char *buf, size_t len)
{
	ZSTD_inBuffer ib = {buf, len, 0};

	while (ib.pos < ib.size) {
		ZSTD_outBuffer ob = {z->out, z->outcap, 0};
		size_t rc = ZSTD_decompressStream(z->ds, &ob, &ib);
		int src;

		if (ZSTD_isError(rc))
			return -EINVAL;
		z->hint = rc;
		if (ob.pos && (src = z->sink(z->arg, z->out, ob.pos)) < 0)
			return src;
	}
	return 0;
}

int zin_end(struct zin *z)
{
	return z->hint == 0 ? 0 : -EINVAL;
}

void zin_free(struct zin *z)
{
	ZSTD_freeDStream(z->ds);
	free(z->out);
	free(z);
}

#else

bool snap_zstd_built(void)
{
	return false;
}

struct zout *zout_new(ssize_t (*fill)(void *arg, char *buf, size_t size), void *arg)
{
	(void)fill;
	(void)arg;
	return NULL;
}

ssize_t zout_read(struct zout *z, char *buf, size_t size)
{
	(void)z;
	(void)buf;
	(void)size;
	return -EOPNOTSUPP;
}

void zout_free(struct zout *z)
{
	(void)z;
}

struct zin *zin_new(int (*sink)(void *arg, const char *buf, size_t len), void *arg)
{
	(void)sink;
	(void)arg;
	return NULL;
}

int zin_feed(struct zin *z, const char *buf, size_t len)
{
	(void)z;
	(void)buf;
	(void)len;
	return -EOPNOTSUPP;
}

int zin_end(struct zin *z)
{
	(void)z;
	return -EOPNOTSUPP;
}

void zin_free(struct zin *z)
{
	(void)z;
}

#endif
