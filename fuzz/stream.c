/*
 * The graph-stream codec, every record type: stream input (fuzz.h; the
 * first stream only) read to its end with kg_read, every record written
 * again with the writer its type has (kg_write_header_tool, _str, _proc,
 * _task, _edge, _cov, _sim, _end; kg_write_bytes for the rest). When the
 * input reads whole, so must what was written, with as many records of
 * each type: a reader that takes what its writer cannot say, or a writer
 * that says what its reader refuses, aborts.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "kg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Read fp to its end: the count of each record type, the last status. */
static int
read_all(FILE *fp, unsigned long *count, struct kg_writer *w)
{
	struct kg_reader r;
	struct kg_rec rec;
	int t;

	if (kg_reader_init(&r, fp) < 0)
		abort();
	kg_rec_init(&rec);
	while ((t = kg_read(&r, &rec)) > 0) {
		count[t]++;
		if (w == NULL)
			continue;
		switch (t) {
		case KG_R_HEADER:
			kg_write_header_tool(w, &rec.header, "fuzz");
			break;
		case KG_R_STR: {
			const char *s = kg_str(&r, rec.str_id);

			kg_write_str(w, rec.str_id, s, strlen(s));
			break;
		}
		case KG_R_PROC:
			kg_write_proc(w, &rec.proc);
			break;
		case KG_R_TASK:
			kg_write_task(w, &rec.task);
			break;
		case KG_R_EDGE:
			kg_write_edge(w, &rec.edge);
			break;
		case KG_R_COV:
			kg_write_cov(w, &rec.cov);
			break;
		case KG_R_SIM: {
			/* the writer takes times whose steps and lengths fit */
			size_t i;
			int64_t d;
			int ok = rec.sim.ss != NULL;

			for (i = 0; ok && i < rec.sim.n; i++)
				ok = !__builtin_sub_overflow(rec.sim.se[i], rec.sim.ss[i], &d) &&
				    (i == 0 || !__builtin_sub_overflow(rec.sim.ss[i], rec.sim.ss[i - 1], &d));
			if (ok)
				kg_write_sim(w, rec.sim.n, rec.sim.ss, rec.sim.se, rec.sim.uss, rec.sim.use);
			else
				kg_write_bytes(w, rec.bytes, rec.nbytes, t);
			break;
		}
		case KG_R_END:
			kg_write_end(w);
			break;
		default:
			kg_write_bytes(w, rec.bytes, rec.nbytes, t);
			break;
		}
	}
	kg_rec_release(&rec);
	kg_reader_release(&r);
	return t;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned long n1[KG_R_OTHER + 1] = { 0 }, n2[KG_R_OTHER + 1] = { 0 };
	struct kg_writer w;
	uint8_t *z;
	size_t nz, nout = 0;
	char *out = NULL;
	FILE *in, *fo;
	int t;

	z = fz_pack(data, size, &nz);
	in = nz > 0 ? fmemopen(z, nz, "rb") : fopen("/dev/null", "rb");
	fo = open_memstream(&out, &nout);
	if (in == NULL || fo == NULL || kg_writer_init(&w, fo, 1) < 0)
		abort();
	t = read_all(in, n1, &w);
	fclose(in);
	free(z);
	if (kg_writer_finish(&w) < 0)
		abort();
	kg_writer_release(&w);
	fclose(fo);
	if (t == KG_R_EOF) {
		in = nout > 0 ? fmemopen(out, nout, "rb") : fopen("/dev/null", "rb");
		if (in == NULL || read_all(in, n2, NULL) != KG_R_EOF)
			abort();
		fclose(in);
		n1[KG_R_OTHER] = n2[KG_R_OTHER] = 0;
		if (memcmp(n1, n2, sizeof(n1)) != 0)
			abort();
	}
	free(out);
	return 0;
}
