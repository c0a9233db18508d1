/*
 * graph-deps --merge of several streams: stream input (fuzz.h), split
 * at 0xc1 0xc1 into up to four files, merged as `graph-deps --merge -q
 * -o OUT FILE...`; a section count of any size in each.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz.h"

int graph_deps_main(int argc, char **argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *paths[FZ_MAXFILES], *argv[6 + FZ_MAXFILES];
	int i, n, rc;

	fz_init();
	n = fz_streams(data, size, paths);
	argv[0] = "graph-deps", argv[1] = "--merge", argv[2] = "-q", argv[3] = "-o";
	argv[4] = fz_path("out.kg");
	for (i = 0; i < n; i++)
		argv[5 + i] = paths[i];
	argv[5 + n] = NULL;
	rc = fz_main(graph_deps_main, argv, 0);
	if (rc != 0 && rc != 1)
		abort();
	return 0;
}
