/*
 * kineto2graph's JSON reader, the structure: YAJL's callbacks
 * (jp_callbacks) and the small context stack that says where each token
 * sits (the top-level object, the traceEvents array, an event, its args,
 * the metadata: distributedInfo and its pg_config, deviceProperties;
 * text being captured, or a value skipped), and the keys acted on, each
 * to its enum key (jp.h). Containers open and close here (push, pop): an
 * event starts with its fields reset (cur_reset) and ends kept or
 * counted (keep_event, events.c); a captured value, a pg_config entry or
 * a deviceProperties entry is stored at its close. Scalars go to
 * on_scalar (fields.c). A container where a known key wants another
 * kind of value is an error, worded here, as the nesting past MAX_DEPTH.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jp.h"
#include "k2g.h"
#include "util.h"

int
jp_fail(struct jp *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->err, sizeof(p->err), fmt, ap);
	va_end(ap);
	return 0;
}

/* What a known key's value must be, for messages. */
static const char *
expects(int k)
{
	switch (k) {
	case E_PH: case E_CAT: case E_NAME: case A_COLL: case A_DTYPE:
	case A_PGNAME: case A_SYNCKIND: case A_NAME:
		return "a string";
	case E_PID: case E_TID:
		return "a number or a string";
	case E_TS: case E_DUR:
		return "a number";
	default:
		return "an integer";
	}
}

const char *
keyname(int k)
{
	static const char *const n[] = {
		"", "ph", "cat", "name", "pid", "tid", "ts", "dur", "args",
		"args.correlation", "args.stream", "args.device", "args.bytes",
		"args.Input Dims", "args.Collective name", "args.In msg nelems",
		"args.Out msg nelems", "args.Group size", "args.dtype",
		"args.Process Group Name", "args.Process Group Ranks", "args.Seq",
		"args.cuda_sync_kind", "args.wait_on_stream",
		"args.wait_on_cuda_event_record_corr_id", "args.name", "args.Input type",
		"args.Sequence number", "args.Module Hierarchy", "args.Total Allocated",
		"args.Total Reserved", "args.Bytes", "args.Device Type",
		"traceEvents", "baseTimeNanoseconds", "distributedInfo",
		"distributedInfo.rank", "distributedInfo.world_size",
		"distributedInfo.pg_config", "pg_config.pg_name", "pg_config.ranks",
		"deviceProperties", "deviceProperties.id", "deviceProperties.name",
		"deviceProperties.totalGlobalMem", "deviceProperties.numSms"
	};
	return n[k];
}

#define KEQ(lit) (len == sizeof(lit) - 1 && memcmp(s, lit, sizeof(lit) - 1) == 0)

static int
event_key(const char *s, size_t len)
{
	switch (len) {
	case 2:
		if (KEQ("ph"))
			return E_PH;
		if (KEQ("ts"))
			return E_TS;
		break;
	case 3:
		if (KEQ("cat"))
			return E_CAT;
		if (KEQ("pid"))
			return E_PID;
		if (KEQ("tid"))
			return E_TID;
		if (KEQ("dur"))
			return E_DUR;
		break;
	case 4:
		if (KEQ("name"))
			return E_NAME;
		if (KEQ("args"))
			return E_ARGS;
		break;
	}
	return K_NONE;
}

static int
args_key(const char *s, size_t len)
{
	switch (s[0]) {
	case 'c':
		if (KEQ("correlation"))
			return A_CORR;
		if (KEQ("cuda_sync_kind"))
			return A_SYNCKIND;
		break;
	case 's':
		if (KEQ("stream"))
			return A_STREAM;
		break;
	case 'd':
		if (KEQ("device"))
			return A_DEVICE;
		if (KEQ("dtype"))
			return A_DTYPE;
		break;
	case 'b':
		if (KEQ("bytes"))
			return A_BYTES;
		break;
	case 'I':
		if (KEQ("Input Dims") || KEQ("Input dims"))
			return A_DIMS;
		if (KEQ("In msg nelems"))
			return A_INNEL;
		if (KEQ("Input type"))
			return A_ITYPE;
		break;
	case 'C':
		if (KEQ("Collective name"))
			return A_COLL;
		break;
	case 'M':
		if (KEQ("Module Hierarchy"))
			return A_MODH;
		break;
	case 'T':
		if (KEQ("Total Allocated"))
			return A_TALLOC;
		if (KEQ("Total Reserved"))
			return A_TRES;
		break;
	case 'B':
		if (KEQ("Bytes"))
			return A_MBYTES;
		break;
	case 'D':
		if (KEQ("Device Type"))
			return A_DEVTYPE;
		break;
	case 'O':
		if (KEQ("Out msg nelems"))
			return A_OUTNEL;
		break;
	case 'G':
		if (KEQ("Group size"))
			return A_GSIZE;
		break;
	case 'P':
		if (KEQ("Process Group Name"))
			return A_PGNAME;
		if (KEQ("Process Group Ranks"))
			return A_PGRANKS;
		break;
	case 'S':
		if (KEQ("Seq"))
			return A_SEQ;
		if (KEQ("Sequence number"))
			return A_SEQNR;
		break;
	case 'w':
		if (KEQ("wait_on_stream"))
			return A_WSTREAM;
		if (KEQ("wait_on_cuda_event_record_corr_id"))
			return A_WCORR;
		break;
	case 'n':
		if (KEQ("name"))
			return A_NAME;
		break;
	}
	return K_NONE;
}

static int
cb_null(void *ctx)
{
	return on_scalar(ctx, (const unsigned char *)"null", 4, -1);
}

static int
cb_bool(void *ctx, int b)
{
	return on_scalar(ctx, (const unsigned char *)(b ? "true" : "false"), b ? 4 : 5, -1);
}

static int
cb_number(void *ctx, const char *s, size_t len)
{
	return on_scalar(ctx, (const unsigned char *)s, len, 0);
}

static int
cb_string(void *ctx, const unsigned char *s, size_t len)
{
	return on_scalar(ctx, s, len, 1);
}

static int
cb_key(void *ctx, const unsigned char *s, size_t len)
{
	struct jp *p = ctx;
	int c = p->ctx[p->depth];

	if (len > MAX_STRING)
		return jp_fail(p, "string longer than %s bytes", "1048576");
	switch (c) {
	case C_EVENT:
		p->key = event_key((const char *)s, len);
		break;
	case C_ARGS:
		p->key = len ? args_key((const char *)s, len) : K_NONE;
		break;
	case C_TOP:
		p->key = len == 11 && memcmp(s, "traceEvents", 11) == 0 ? T_EVENTS :
		    len == 19 && memcmp(s, "baseTimeNanoseconds", 19) == 0 ? T_BASE :
		    len == 15 && memcmp(s, "distributedInfo", 15) == 0 ? T_DIST :
		    len == 16 && memcmp(s, "deviceProperties", 16) == 0 ? T_DEVS : K_NONE;
		break;
	case C_DEV:
		p->key = len == 2 && memcmp(s, "id", 2) == 0 ? V_ID :
		    len == 4 && memcmp(s, "name", 4) == 0 ? V_NAME :
		    len == 14 && memcmp(s, "totalGlobalMem", 14) == 0 ? V_MEM :
		    len == 6 && memcmp(s, "numSms", 6) == 0 ? V_SMS : K_NONE;
		break;
	case C_DIST:
		p->key = len == 4 && memcmp(s, "rank", 4) == 0 ? D_RANK :
		    len == 10 && memcmp(s, "world_size", 10) == 0 ? D_WORLD :
		    len == 9 && memcmp(s, "pg_config", 9) == 0 ? D_PGCFG : K_NONE;
		break;
	case C_PGENT:
		p->key = len == 7 && memcmp(s, "pg_name", 7) == 0 ? G_NAME :
		    len == 5 && memcmp(s, "ranks", 5) == 0 ? G_RANKS : K_NONE;
		break;
	case C_CAPTURE:
		cap_sep(p);
		cap_string(&p->c, s, len);
		cap_put(&p->c, ":", 1);
		p->first[p->depth] = 1; /* the value needs no comma */
		break;
	default:
		p->key = K_NONE;
	}
	return 1;
}

static int
push(struct jp *p, int is_map)
{
	int parent = p->ctx[p->depth], k = p->key, nc;

	if (p->depth == MAX_DEPTH)
		return jp_fail(p, "nesting deeper than %s levels", "64");
	if (p->depth == 0) {
		nc = is_map ? C_TOP : C_EVENTS;
		p->top = 1;
	}
	else if (parent == C_CAPTURE) {
		cap_sep(p);
		cap_put(&p->c, is_map ? "{" : "[", 1);
		nc = C_CAPTURE;
	} else if (parent == C_SKIP)
		nc = C_SKIP;
	else if (parent == C_TOP && k == T_EVENTS) {
		if (is_map)
			return jp_fail(p, "field %s: expected an array", "traceEvents");
		nc = C_EVENTS;
		p->seen_events = 1;
	} else if (parent == C_TOP && k == T_DIST && is_map)
		nc = C_DIST;
	else if (parent == C_TOP && k == T_DEVS && !is_map)
		nc = C_DEVS;
	else if (parent == C_DEVS && is_map) {
		p->dev.id = p->dev.mem = p->dev.sms = -1;
		p->dev.name = KG_NONE;
		nc = C_DEV;
	}
	else if (parent == C_DIST && k == D_PGCFG && !is_map)
		nc = C_PGCFG;
	else if (parent == C_PGCFG && is_map) {
		p->pgname = KG_NONE;
		p->pgranks = KG_NONE;
		nc = C_PGENT;
	} else if (parent == C_PGENT && k == G_RANKS && !is_map) {
		p->c.caplen = 0;
		p->pgranks_n = 0;
		cap_put(&p->c, "[", 1);
		nc = C_PGRANKS;
	}
	else if (parent == C_EVENTS) {
		if (!is_map)
			return jp_fail(p, "%s", "traceEvents: an event is not an object");
		cur_reset(&p->c);
		nc = C_EVENT;
	} else if (parent == C_EVENT && k == E_ARGS) {
		if (!is_map)
			return jp_fail(p, "field %s: expected an object", "args");
		nc = C_ARGS;
	} else if (parent == C_EVENT && k != K_NONE) {
		return jp_fail(p, "field %s: expected %s", keyname(k), expects(k));
	} else if (parent == C_ARGS && (k == A_DIMS || k == A_PGRANKS || k == A_ITYPE)) {
		p->c.caplen = 0;
		cap_put(&p->c, is_map ? "{" : "[", 1);
		p->capkey = k;
		p->capdepth = p->depth + 1;
		nc = C_CAPTURE;
	} else if (parent == C_ARGS && k != K_NONE) {
		return jp_fail(p, "field %s: expected %s", keyname(k), expects(k));
	} else
		nc = C_SKIP;
	p->depth++;
	p->ctx[p->depth] = (unsigned char)nc;
	p->first[p->depth] = 1;
	p->key = K_NONE;
	return 1;
}

static int
pop(struct jp *p, int is_map)
{
	int c = p->ctx[p->depth];

	p->depth--;
	if (c == C_PGRANKS) {
		cap_put(&p->c, "]", 1);
		p->pgranks = intern_get(&p->t->str, p->c.cap, p->c.caplen);
	} else if (c == C_DEV) {
		if (p->t->ndev < 64)
			VEC_PUSH(p->t->dev, p->t->ndev, p->t->capdev, p->dev);
	} else if (c == C_PGENT) {
		if (p->pgname != KG_NONE && p->pgranks != KG_NONE) {
			struct pgcfg e = { p->pgname, p->pgranks };

			VEC_PUSH(p->t->pgcfg, p->t->npgcfg, p->t->cappgcfg, e);
		}
	} else if (c == C_CAPTURE) {
		cap_put(&p->c, is_map ? "}" : "]", 1);
		if (p->depth + 1 == p->capdepth) {
			uint32_t id = intern_get(&p->t->str, p->c.cap, p->c.caplen);

			if (p->capkey == A_DIMS)
				p->c.dims = id;
			else if (p->capkey == A_ITYPE)
				p->c.itypes = id;
			else
				p->c.pgranks = p->c.cm.pgr = id, p->c.cm_any = 1;
		}
	} else if (c == C_EVENT) {
		keep_event(p);
		if (p->err[0])
			return 0;
		if (p->h != NULL)
			p->evend = p->base + yajl_get_bytes_consumed(p->h);
	}
	p->key = K_NONE;
	return 1;
}

static int cb_start_map(void *ctx) { return push(ctx, 1); }
static int cb_end_map(void *ctx) { return pop(ctx, 1); }
static int cb_start_array(void *ctx) { return push(ctx, 0); }
static int cb_end_array(void *ctx) { return pop(ctx, 0); }

const yajl_callbacks jp_callbacks = {
	cb_null, cb_bool, NULL, NULL, cb_number, cb_string,
	cb_start_map, cb_key, cb_end_map, cb_start_array, cb_end_array
};
