/*
 * fuzz: what the libFuzzer harnesses share (fuzz/README for how to run
 * them). Each harness is one tool's main (renamed NAME_main by the build)
 * or the codec itself, fed from files in a private temporary directory.
 *
 * Stream input. The first byte picks the form of the rest:
 * - odd: the rest is the stream's bytes, as they are (zstd framing,
 *   truncations, checksums);
 * - even: the rest is MessagePack records, compressed here with frame
 *   checksums on, in frames of (byte / 2) * 61 bytes (0: one frame), so
 *   mutations reach the record decoder instead of failing a checksum.
 * In either form the bytes 0xc1 0xc1 (0xc1 is never MessagePack) split
 * the input into several streams, for the tools that read more than one.
 */
#ifndef KG_FUZZ_H
#define KG_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#define FZ_MAXFILES 4

/*
 * Once: the temporary directory ($TMPDIR, else /dev/shm, else /tmp;
 * removed at exit), stdout to /dev/null.
 */
void fz_init(void);
/* The path of NAME in the directory. */
const char *fz_path(const char *name);
/* Write n bytes to NAME; its path. */
const char *fz_write(const char *name, const void *p, size_t n);
/*
 * Stream input (above) into files s0.kg, s1.kg, ...: how many (at least
 * 1), their paths in paths[].
 */
int fz_streams(const uint8_t *data, size_t size, const char **paths);
/* The streams' bytes for one piece, in memory (malloc'd, *n bytes). */
uint8_t *fz_pack(const uint8_t *data, size_t size, size_t *n);
/*
 * Run a tool's main with argv (NULL-terminated), getopt reset; `closes`:
 * the tool closes stdout (a text tool), which is then opened again on
 * /dev/null. Its exit status.
 */
int fz_main(int (*fn)(int, char **), const char *const *argv, int closes);

#endif
