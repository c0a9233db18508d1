/*
 * graphcat: a graph stream as JSON lines, one record a line, in stream
 * order, for people, jq and tests. Keys keep the order the writer gave
 * them, so the output is as deterministic as the stream.
 *
 * State: the current section's string table (with --resolve).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kg.h"
#include "mp.h"
#include "util.h"

static const char usage[] = "graphcat [-r] [FILE ...]";

static const char help[] =
    "Print graph streams as JSON lines, one record a line.\n"
    "\n"
    "  -r, --resolve   print names instead of string ids, and omit str records\n"
    "  -h, --help      this help\n"
    "      --version   the version\n"
    "\n"
    "With no FILE, or FILE -, read standard input. See graphcat(1).\n";

/* Keys that hold string ids, by record type. */
static int
is_str_key(int type, const struct mp_val *k)
{
	static const char *const task[] = { "n", "op", "sh", "ty", "pg", "pgr", "dt", NULL };
	size_t i;

	if (type == KG_R_PROC)
		return k->n == 1 && k->s[0] == 'n';
	if (type != KG_R_TASK)
		return 0;
	for (i = 0; task[i]; i++)
		if (strlen(task[i]) == k->n && memcmp(task[i], k->s, k->n) == 0)
			return 1;
	return 0;
}

/*
 * Print the value at the cursor as JSON. The reader has checked the
 * record is well formed and nested at most MP_MAXDEPTH deep. With r, the
 * value is a record of that type: keys that hold string ids print the
 * string instead.
 */
static void
put_val(struct mp *c, const struct kg_reader *r, int type)
{
	struct mp_val v;
	uint32_t i, n;

	if (mp_next(c, &v) < 0)
		return;
	switch (v.type) {
	case MP_NIL:
		fputs("null", stdout);
		break;
	case MP_BOOL:
		fputs(v.b ? "true" : "false", stdout);
		break;
	case MP_UINT:
		printf("%llu", (unsigned long long)v.u);
		break;
	case MP_INT:
		printf("%lld", (long long)v.i);
		break;
	case MP_FLOAT:
		printf("%.17g", v.f);
		break;
	case MP_STR:
	case MP_BIN:
		json_str(stdout, v.s, v.n);
		break;
	case MP_ARRAY:
		putchar('[');
		for (i = 0, n = v.n; i < n; i++) {
			if (i)
				putchar(',');
			put_val(c, NULL, 0);
		}
		putchar(']');
		break;
	case MP_MAP:
		putchar('{');
		for (i = 0, n = v.n; i < n; i++) {
			struct mp k = *c;
			struct mp_val kv, x;
			const char *s;

			if (i)
				putchar(',');
			put_val(c, NULL, 0);
			putchar(':');
			if (r != NULL && mp_next(&k, &kv) == 0 && kv.type == MP_STR &&
			    is_str_key(type, &kv) && mp_next(&k, &x) == 0 && x.type == MP_UINT &&
			    x.u < UINT32_MAX && (s = kg_str(r, (uint32_t)x.u)) != NULL) {
				json_str(stdout, s, strlen(s));
				*c = k;
			} else {
				put_val(c, NULL, 0);
			}
		}
		putchar('}');
		break;
	default:
		fputs("null", stdout); /* an extension */
	}
}

/*
 * A sim record with times: printed with them as starts and ends (`ss`,
 * `se`), whichever form the stream holds them in (1.3 writes steps and
 * lengths, formats/graph-stream.md).
 */
static void
put_sim(const struct kg_sim *s)
{
	size_t i;

	printf("{\"r\":\"sim\",\"tasks\":%llu,\"makespan\":%lld,\"ss\":[",
	    (unsigned long long)s->tasks, (long long)s->makespan);
	for (i = 0; i < s->n; i++)
		printf(i ? ",%lld" : "%lld", (long long)s->ss[i]);
	fputs("],\"se\":[", stdout);
	for (i = 0; i < s->n; i++)
		printf(i ? ",%lld" : "%lld", (long long)s->se[i]);
	fputs("]}", stdout);
}

static int
cat(const char *path, int resolve)
{
	struct gin in;
	struct mp c;
	int t;

	if (gin_open(&in, path) < 0)
		return 1;
	while ((t = gin_read(&in)) > 0) {
		if (resolve && t == KG_R_STR)
			continue;
		if (t == KG_R_SIM && in.rec.sim.ss != NULL) {
			put_sim(&in.rec.sim);
		} else {
			mp_init(&c, in.rec.bytes, in.rec.nbytes);
			put_val(&c, resolve ? &in.r : NULL, t);
		}
		putchar('\n');
	}
	gin_close(&in);
	return t < 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "resolve", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c, i, resolve = 0, rc = 0;

	cli_init("graphcat");
	while ((c = getopt_long(argc, argv, "rh", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			resolve = 1;
			break;
		case 'h':
			printf("usage: %s\n\n%s", usage, help);
			return close_stdout();
		case 'V':
			version_exit();
		default:
			usage_exit(usage);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc == 0)
		rc = cat(NULL, resolve);
	for (i = 0; i < argc && rc == 0; i++)
		rc = cat(argv[i], resolve);
	if (close_stdout() != 0)
		rc = 1;
	return rc;
}
