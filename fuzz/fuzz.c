#define _GNU_SOURCE
#include "fuzz.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

static char dir[64];
static char path[FZ_MAXFILES + 8][128];
static int npath;

static void
cleanup(void)
{
	char cmd[128];

	/* our own directory only */
	if (dir[0] != '\0' && snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir) < (int)sizeof(cmd))
		if (system(cmd) != 0)
			return;
}

void
fz_init(void)
{
	const char *t = getenv("TMPDIR");

	if (dir[0] != '\0')
		return;
	/* files in memory if we can: on disk, renames and unlinks made the
	 * file harnesses six times slower */
	if (t == NULL || strlen(t) >= 40)
		t = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(dir, sizeof(dir), "%s/kgfuzz.XXXXXX", t);
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		abort();
	}
	atexit(cleanup);
	if (freopen("/dev/null", "w", stdout) == NULL)
		abort();
}

const char *
fz_path(const char *name)
{
	int i;

	for (i = 0; i < npath; i++)
		if (strcmp(strrchr(path[i], '/') + 1, name) == 0)
			return path[i];
	if (npath == (int)(sizeof(path) / sizeof(path[0])))
		abort();
	snprintf(path[npath], sizeof(path[npath]), "%s/%s", dir, name);
	return path[npath++];
}

const char *
fz_write(const char *name, const void *p, size_t n)
{
	const char *f = fz_path(name);
	FILE *fp = fopen(f, "wb");

	if (fp == NULL || (n > 0 && fwrite(p, 1, n, fp) != n) || fclose(fp) != 0)
		abort();
	return f;
}

uint8_t *
fz_pack(const uint8_t *data, size_t size, size_t *n)
{
	ZSTD_CCtx *cc;
	uint8_t *out;
	size_t chunk, i, cap, len = 0;

	if (size == 0 || (data[0] & 1)) {
		out = malloc(size > 1 ? size - 1 : 1);
		if (size > 1)
			memcpy(out, data + 1, size - 1);
		*n = size > 1 ? size - 1 : 0;
		return out;
	}
	chunk = (size_t)(data[0] >> 1) * 61;
	data++, size--;
	if (chunk == 0)
		chunk = size > 0 ? size : 1;
	cap = ZSTD_compressBound(size) + (size / chunk + 1) * 32 + 64;
	out = malloc(cap);
	cc = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 1);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	i = 0;
	do {
		size_t k = size - i < chunk ? size - i : chunk;
		size_t r = ZSTD_compress2(cc, out + len, cap - len, data + i, k);

		if (ZSTD_isError(r))
			abort();
		len += r;
		i += k;
	} while (i < size);
	ZSTD_freeCCtx(cc);
	*n = len;
	return out;
}

int
fz_streams(const uint8_t *data, size_t size, const char **paths)
{
	int nf = 0;
	size_t i = 0, start = 0;
	uint8_t mode = size > 0 ? data[0] : 1;

	if (size > 0)
		i = start = 1;
	for (;; i++) {
		if (i == size || (nf < FZ_MAXFILES - 1 && i + 1 < size && data[i] == 0xc1 &&
		    data[i + 1] == 0xc1)) {
			char name[16];
			uint8_t *piece = malloc(i - start + 1), *z;
			size_t nz;

			piece[0] = mode;
			memcpy(piece + 1, data + start, i - start);
			z = fz_pack(piece, i - start + 1, &nz);
			snprintf(name, sizeof(name), "s%d.kg", nf);
			paths[nf++] = fz_write(name, z, nz);
			free(piece);
			free(z);
			if (i == size)
				break;
			i++;
			start = i + 1;
		}
	}
	return nf;
}

int
fz_main(int (*fn)(int, char **), const char *const *argv, int closes)
{
	char *v[32];
	int argc, rc;

	for (argc = 0; argv[argc] != NULL && argc < 31; argc++)
		v[argc] = (char *)argv[argc];
	v[argc] = NULL;
	optind = 0; /* glibc: start getopt afresh */
	rc = fn(argc, v);
	fflush(stderr);
	if (closes) {
		stdout = fopen("/dev/null", "w");
		if (stdout == NULL)
			abort();
	}
	return rc;
}
