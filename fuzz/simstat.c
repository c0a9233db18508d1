/*
 * graphsim, then graphstat on what it wrote: stream input (fuzz.h), the
 * first stream simulated (`graphsim -q -o SIM FILE`), and when that
 * succeeds, `graphstat --csv --util U --colls C --comm M SIM`, the text
 * report, `graphstat --top 3 SIM` (its memory, collectives, medians and
 * kernel lists), and the critical paths, `graphstat --critical --top 3
 * SIM`; graphstat on the input as it is (measured times only) when the
 * simulation fails.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz.h"

int graphsim_main(int argc, char **argv);
int graphstat_main(int argc, char **argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *paths[FZ_MAXFILES], *sim, *argv[12];
	int rc;

	fz_init();
	fz_streams(data, size, paths);
	sim = fz_path("sim.kg");
	argv[0] = "graphsim", argv[1] = "-q", argv[2] = "-o", argv[3] = sim;
	argv[4] = paths[0], argv[5] = NULL;
	rc = fz_main(graphsim_main, argv, 0);
	if (rc != 0 && rc != 1)
		abort();
	argv[0] = "graphstat", argv[1] = "--csv";
	argv[2] = "--util", argv[3] = fz_path("util.csv");
	argv[4] = "--colls", argv[5] = fz_path("colls.csv");
	argv[6] = "--comm", argv[7] = fz_path("comm.csv");
	argv[8] = rc == 0 ? sim : paths[0], argv[9] = NULL;
	rc = fz_main(graphstat_main, argv, 1);
	if (rc != 0 && rc != 1)
		abort();
	argv[1] = "--top", argv[2] = "3", argv[3] = argv[8], argv[4] = NULL;
	rc = fz_main(graphstat_main, argv, 1);
	if (rc != 0 && rc != 1)
		abort();
	argv[1] = "--critical", argv[2] = "--top", argv[3] = "3", argv[4] = argv[8];
	argv[5] = NULL;
	rc = fz_main(graphstat_main, argv, 1);
	if (rc != 0 && rc != 1)
		abort();
	return 0;
}
