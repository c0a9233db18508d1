/*
 * kineto2graph's ingestion: the input is one trace file (JSON, or gzip:
 * the tool tells them apart by their first bytes), converted to a graph
 * stream as `kineto2graph -q -o OUT FILE` would. A status other than 0
 * or 1 is a defect; so is anything the sanitizers see.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz.h"

int kineto2graph_main(int argc, char **argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in, *argv[6];
	int rc;

	fz_init();
	in = fz_write("trace.json", data, size);
	argv[0] = "kineto2graph", argv[1] = "-q", argv[2] = "-o";
	argv[3] = fz_path("out.kg"), argv[4] = in, argv[5] = NULL;
	rc = fz_main(kineto2graph_main, argv, 0);
	if (rc != 0 && rc != 1)
		abort();
	return 0;
}
