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

static void
put_str(const char *s, size_t len)
{
	size_t i;

	putchar('"');
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			putchar('\\');
			putchar(c);
		} else if (c == '\n') {
			fputs("\\n", stdout);
		} else if (c == '\t') {
			fputs("\\t", stdout);
		} else if (c < 0x20 || c == 0x7f) {
			printf("\\u%04x", c);
		} else if (c < 0x80) {
			putchar(c);
		} else {
			/* Pass valid UTF-8 through; anything else becomes U+FFFD. */
			size_t n = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
			size_t k;

			if (n == 0 || i + n > len)
				n = 0;
			for (k = 1; k < n; k++)
				if (((unsigned char)s[i + k] & 0xc0) != 0x80)
					n = 0;
			if (n == 0) {
				fputs("\\ufffd", stdout);
			} else {
				fwrite(s + i, 1, n, stdout);
				i += n - 1;
			}
		}
	}
	putchar('"');
}

static void
put_obj(const msgpack_object *o)
{
	uint32_t i;

	switch (o->type) {
	case MSGPACK_OBJECT_NIL:
		fputs("null", stdout);
		break;
	case MSGPACK_OBJECT_BOOLEAN:
		fputs(o->via.boolean ? "true" : "false", stdout);
		break;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		printf("%llu", (unsigned long long)o->via.u64);
		break;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		printf("%lld", (long long)o->via.i64);
		break;
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		printf("%.17g", o->via.f64);
		break;
	case MSGPACK_OBJECT_STR:
		put_str(o->via.str.ptr, o->via.str.size);
		break;
	case MSGPACK_OBJECT_BIN:
		put_str(o->via.bin.ptr, o->via.bin.size);
		break;
	case MSGPACK_OBJECT_ARRAY:
		putchar('[');
		for (i = 0; i < o->via.array.size; i++) {
			if (i)
				putchar(',');
			put_obj(&o->via.array.ptr[i]);
		}
		putchar(']');
		break;
	case MSGPACK_OBJECT_MAP:
		putchar('{');
		for (i = 0; i < o->via.map.size; i++) {
			if (i)
				putchar(',');
			put_obj(&o->via.map.ptr[i].key);
			putchar(':');
			put_obj(&o->via.map.ptr[i].val);
		}
		putchar('}');
		break;
	default:
		fputs("null", stdout);
	}
}

/* Keys that hold string ids, by record type. */
static int
is_str_key(int type, const msgpack_object_str *k)
{
	static const char *const task[] = { "n", "op", "sh", "pg", "pgr", "dt", NULL };
	size_t i;

	if (type == KG_R_PROC)
		return k->size == 1 && k->ptr[0] == 'n';
	if (type != KG_R_TASK)
		return 0;
	for (i = 0; task[i]; i++)
		if (strlen(task[i]) == k->size && memcmp(task[i], k->ptr, k->size) == 0)
			return 1;
	return 0;
}

static void
put_resolved(const struct kg_reader *r, int type, const msgpack_object *o)
{
	uint32_t i;

	putchar('{');
	for (i = 0; i < o->via.map.size; i++) {
		const msgpack_object_kv *kv = &o->via.map.ptr[i];

		if (i)
			putchar(',');
		put_obj(&kv->key);
		putchar(':');
		if (kv->key.type == MSGPACK_OBJECT_STR && is_str_key(type, &kv->key.via.str) &&
		    kv->val.type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
		    kg_str(r, (uint32_t)kv->val.via.u64) != NULL) {
			const char *s = kg_str(r, (uint32_t)kv->val.via.u64);

			put_str(s, strlen(s));
		} else {
			put_obj(&kv->val);
		}
	}
	putchar('}');
}

static int
cat(const char *path, int resolve)
{
	struct gin in;
	int t;

	if (gin_open(&in, path) < 0)
		return 1;
	while ((t = gin_read(&in)) > 0) {
		if (resolve && t == KG_R_STR)
			continue;
		if (resolve)
			put_resolved(&in.r, t, in.rec.raw);
		else
			put_obj(in.rec.raw);
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
