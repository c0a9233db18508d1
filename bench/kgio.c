/*
 * bench/kgio FILE [LEVEL]: what reading a graph stream costs against
 * writing it (issue 18: writing at most 1.5 times reading). Reads every
 * record of FILE, keeping its tasks and edges (the bulk of a graph),
 * then writes them again, as one section, to /dev/null at zstd LEVEL
 * (default KG_LEVEL). Prints the CPU seconds of each phase, best of 3.
 * Built by bench/io-speed against build/libcommon.a.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kg.h"
#include "util.h"

static double
cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	struct kg_task *t = NULL;
	struct kg_edge *e = NULL;
	size_t nt = 0, ct = 0, ne = 0, ce = 0, i;
	struct kg_header h;
	double best_r = 1e30, best_w = 1e30;
	int level = argc > 2 ? atoi(argv[2]) : KG_LEVEL, run;

	if (argc < 2) {
		fprintf(stderr, "usage: kgio FILE [LEVEL]\n");
		return 2;
	}
	/* a header of its own: the read one's strings point into the reader */
	memset(&h, 0, sizeof(h));
	h.major = KG_MAJOR, h.minor = KG_MINOR;
	h.producer = "kgio", h.source = "", h.gpu = "";
	h.rank = h.world = -1, h.gpu_mem = h.gpu_sms = -1;
	for (run = 0; run < 3; run++) {
		struct kg_reader r;
		struct kg_rec rec;
		FILE *fp = fopen(argv[1], "rb");
		double t0;
		int k;

		if (fp == NULL) {
			perror(argv[1]);
			return 1;
		}
		nt = ne = 0;
		t0 = cpu_now();
		kg_reader_init(&r, fp);
		kg_rec_init(&rec);
		while ((k = kg_read(&r, &rec)) > 0) {
			if (k == KG_R_TASK) {
				VEC_PUSH(t, nt, ct, rec.task);
			} else if (k == KG_R_EDGE) {
				VEC_PUSH(e, ne, ce, rec.edge);
			}
		}
		if (k < 0) {
			fprintf(stderr, "kgio: %s: %s\n", argv[1], r.err);
			return 1;
		}
		kg_rec_release(&rec);
		kg_reader_release(&r);
		fclose(fp);
		if (cpu_now() - t0 < best_r)
			best_r = cpu_now() - t0;
	}
	for (run = 0; run < 3; run++) {
		struct kg_writer w;
		FILE *fp = fopen("/dev/null", "wb");
		double t0 = cpu_now();

		if (fp == NULL || kg_writer_init(&w, fp, level) < 0 || kg_write_header(&w, &h) < 0)
			return 1;
		for (i = 0; i < nt; i++)
			kg_write_task(&w, &t[i]);
		for (i = 0; i < ne; i++)
			kg_write_edge(&w, &e[i]);
		if (kg_write_end(&w) < 0 || kg_writer_finish(&w) < 0) {
			fprintf(stderr, "kgio: %s\n", w.err);
			return 1;
		}
		kg_writer_release(&w);
		fclose(fp);
		if (cpu_now() - t0 < best_w)
			best_w = cpu_now() - t0;
	}
	printf("%s: %zu tasks, %zu edges: read %.3f s, write %.3f s (level %d): %.2fx\n",
	    argv[1], nt, ne, best_r, best_w, level, best_w / best_r);
	free(t);
	free(e);
	return 0;
}
