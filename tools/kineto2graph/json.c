/*
 * Reading a Kineto trace: bytes in (plain or gzip), events out.
 *
 * YAJL parses the JSON in fixed-size chunks and calls back for each token;
 * a small context stack says where each token sits (the top-level object,
 * the traceEvents array, an event, its args, or a value we skip). An
 * event's fields are gathered as they come, in any key order, and the
 * event is classified and kept (or counted as skipped) at its closing
 * brace. Nothing of the JSON text is held beyond the current chunk and the
 * current event, so memory grows with the events kept, never with the
 * file.
 *
 * Known fields with the wrong type are errors; unknown fields and
 * categories are ignored and counted. A large plain file is parsed in
 * two halves at once (split.c); the parser's state is in jp.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>
#include <yajl_parse.h>
#include <zlib.h>

#include "ahead.h"
#include "jp.h"
#include "k2g.h"
#include "util.h"

/* Times (ts, dur, baseTimeNanoseconds) are kept within half the int64
 * range, so that sums and differences of two never overflow: +-146 years
 * of nanoseconds. */
#define MAX_TIME (INT64_MAX / 2)

/* Where a token sits. */
enum ctx { C_TOP, C_EVENTS, C_EVENT, C_ARGS, C_DIST, C_SKIP, C_CAPTURE, C_PGCFG, C_PGENT,
	C_PGRANKS, C_DEVS, C_DEV };

/* Keys we act on, in events (E_), args (A_), the top level (T_), distributedInfo (D_). */
enum key {
	K_NONE,
	E_PH, E_CAT, E_NAME, E_PID, E_TID, E_TS, E_DUR, E_ARGS,
	A_CORR, A_STREAM, A_DEVICE, A_BYTES, A_DIMS, A_COLL, A_INNEL, A_OUTNEL,
	A_GSIZE, A_DTYPE, A_PGNAME, A_PGRANKS, A_SEQ, A_SYNCKIND, A_WSTREAM,
	A_WCORR, A_NAME, A_ITYPE, A_SEQNR, A_MODH, A_TALLOC, A_TRES, A_MBYTES, A_DEVTYPE,
	T_EVENTS, T_BASE, T_DIST,
	D_RANK, D_WORLD, D_PGCFG, G_NAME, G_RANKS,
	T_DEVS, V_ID, V_NAME, V_MEM, V_SMS
};

#define BIT(k) ((uint64_t)1 << ((k) - E_PH))

static int
fail(struct jp *p, const char *fmt, ...)
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

static const char *
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

/*
 * Microseconds as JSON writes them ("1712195495519689", "4458676522690.655",
 * "1.7e15") to integer nanoseconds, exactly where the text allows it:
 * decimal digits are shifted, not multiplied in floating point.
 */
static int
us_to_ns(const char *s, size_t len, int64_t *out)
{
	size_t i = 0;
	int neg = 0, fd = 0;
	int64_t ip = 0, frac = 0;

	if (i < len && s[i] == '-')
		neg = 1, i++;
	if (i == len)
		return -1;
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
		if (ip > MAX_TIME / 10000)
			return -1;
		ip = ip * 10 + (s[i] - '0');
	}
	if (i < len && s[i] == '.') {
		for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
			if (fd < 3)
				frac = frac * 10 + (s[i] - '0');
			else if (fd == 3 && s[i] >= '5')
				frac++; /* round half up at the nanosecond */
			fd++;
		}
		for (; fd < 3; fd++)
			frac *= 10;
	}
	if (i < len) { /* an exponent: rare; go through double */
		char buf[64];
		double d;

		if (len >= sizeof(buf))
			return -1;
		memcpy(buf, s, len);
		buf[len] = '\0';
		d = strtod(buf, NULL) * 1000.0;
		if (!(d > -(double)MAX_TIME && d < (double)MAX_TIME))
			return -1;
		*out = (int64_t)(d < 0 ? d - 0.5 : d + 0.5);
		return 0;
	}
	ip = ip * 1000 + frac;
	if (ip > MAX_TIME)
		return -1;
	*out = neg ? -ip : ip;
	return 0;
}

/* An integer ("7", "-1", or "7.0" with a zero fraction). */
static int
to_i64(const char *s, size_t len, int64_t *out)
{
	size_t i = 0;
	int neg = 0;
	uint64_t v = 0;

	if (i < len && s[i] == '-')
		neg = 1, i++;
	if (i == len)
		return -1;
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (i < len && s[i] == '.')
		for (i++; i < len && s[i] == '0'; i++)
			;
	if (i != len || v > (uint64_t)INT64_MAX)
		return -1;
	*out = neg ? -(int64_t)v : (int64_t)v;
	return 0;
}

/*
 * An integer a string holds, as ROCm's traces write them: decimal
 * ("4096", in args.bytes, args.size) or a hex handle ("0x0",
 * "0x7f3a5c000000", in args.stream). Nothing around the digits.
 */
static int
str_int(const char *s, size_t len, int64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (len < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return to_i64(s, len, out);
	for (i = 2; i < len; i++) {
		int d = s[i] >= '0' && s[i] <= '9' ? s[i] - '0' :
		    s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10 :
		    s[i] >= 'A' && s[i] <= 'F' ? s[i] - 'A' + 10 : -1;

		if (d < 0 || v > (uint64_t)INT64_MAX >> 4)
			return -1;
		v = v << 4 | (uint64_t)d;
	}
	*out = (int64_t)v;
	return 0;
}

/* An integer, written as a number (isstr 0) or in a string (isstr > 0). */
static int
any_int(const char *s, size_t len, int isstr, int64_t *out)
{
	if (isstr < 0)
		return -1;
	return isstr > 0 ? str_int(s, len, out) : to_i64(s, len, out);
}

/* Is the string a JSON number's text ("12", "-3.5", "1.7e15")? */
static int
number_text(const char *s, size_t len)
{
	size_t i = 0, d;

	if (i < len && s[i] == '-')
		i++;
	for (d = i; i < len && s[i] >= '0' && s[i] <= '9'; i++)
		;
	if (i == d)
		return 0;
	if (i < len && s[i] == '.') {
		for (d = ++i; i < len && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return 0;
	}
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		if (++i < len && (s[i] == '+' || s[i] == '-'))
			i++;
		for (d = i; i < len && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return 0;
	}
	return i == len;
}

/* pid / tid as strings: "1890023232", "0x1f", "stream 7"; else not numeric. */
static int
str_id(const char *s, size_t len, int64_t *out)
{
	if (len > 7 && memcmp(s, "stream ", 7) == 0)
		s += 7, len -= 7;
	return str_int(s, len, out);
}

static void
cap_put(struct cur *c, const char *s, size_t len)
{
	if (c->caplen + len + 1 > c->capcap)
		grow(&c->cap, &c->capcap, c->caplen + len + 1, 1);
	memcpy(c->cap + c->caplen, s, len);
	c->caplen += len;
}

static void
cap_sep(struct jp *p)
{
	if (!p->first[p->depth])
		cap_put(&p->c, ",", 1);
	p->first[p->depth] = 0;
}

static void
cap_string(struct cur *c, const unsigned char *s, size_t len)
{
	size_t i;

	cap_put(c, "\"", 1);
	for (i = 0; i < len; i++) {
		char e[8];

		if (s[i] == '"' || s[i] == '\\') {
			e[0] = '\\', e[1] = (char)s[i];
			cap_put(c, e, 2);
		} else if (s[i] < 0x20) {
			snprintf(e, sizeof(e), "\\u%04x", s[i]);
			cap_put(c, e, 6);
		} else {
			cap_put(c, (const char *)&s[i], 1);
		}
	}
	cap_put(c, "\"", 1);
}

static void
copy_str(char **buf, size_t *len, size_t *cap, const unsigned char *s, size_t n)
{
	if (n + 1 > *cap)
		grow(buf, cap, n + 1, 1);
	memcpy(*buf, s, n);
	(*buf)[n] = '\0';
	*len = n;
}

static void
cur_reset(struct cur *c)
{
	c->have = 0;
	c->ph = 0;
	c->catlen = 0;
	c->namelen = 0;
	c->pid_str = c->tid_str = 0;
	c->corr = c->stream = c->device = c->seqnr = -1;
	c->bytes = 0;
	c->cm.name = c->cm.dtype = c->cm.pg = c->cm.pgr = KG_NONE;
	c->cm.in_nelems = c->cm.out_nelems = c->cm.gsize = c->cm.seq = -1;
	c->cm_any = 0;
	c->synckind = -1;
	c->wstream = c->wcorr = -1;
	c->dims = c->pgranks = c->itypes = c->modh = KG_NONE;
	c->talloc = c->tres = c->devtype = -1;
	c->mbytes = 0;
	c->anamelen = 0;
}

/* A scalar value: number text, string, or (isstr < 0) a literal true/false/null. */
static int
on_scalar(struct jp *p, const unsigned char *s, size_t len, int isstr)
{
	struct cur *c = &p->c;
	int ctx = p->ctx[p->depth], k = p->key;
	int64_t v;

	if (isstr > 0 && len > MAX_STRING)
		return fail(p, "string longer than %s bytes", "1048576");
	if (ctx == C_PGENT) {
		if (k == G_NAME && isstr > 0)
			p->pgname = intern_get(&p->t->str, (const char *)s, len);
		return 1;
	}
	if (ctx == C_DEV) {
		/* deviceProperties: a field of another type is ignored, as an
		 * unknown one is (the entry is only described by it) */
		if (k == V_NAME && isstr > 0 && len > 0) /* vLLM's MI300X traces: "" */
			p->dev.name = intern_get(&p->t->str, (const char *)s, len);
		else if (k != K_NONE && k != V_NAME &&
		    any_int((const char *)s, len, isstr, &v) == 0 && v >= 0)
			*(k == V_ID ? &p->dev.id : k == V_MEM ? &p->dev.mem : &p->dev.sms) = v;
		return 1;
	}
	if (ctx == C_DEVS)
		return 1;
	if (ctx == C_PGRANKS) {
		char num[24];

		if (any_int((const char *)s, len, isstr, &v) < 0)
			return fail(p, "field %s: expected an integer", keyname(G_RANKS));
		if (p->pgranks_n++ > 0)
			cap_put(c, ", ", 2);
		snprintf(num, sizeof(num), "%lld", (long long)v);
		cap_put(c, num, strlen(num));
		return 1;
	}
	if (ctx == C_CAPTURE) {
		cap_sep(p);
		if (isstr > 0)
			cap_string(c, s, len);
		else
			cap_put(c, (const char *)s, len);
		return 1;
	}
	if (ctx == C_EVENTS)
		return fail(p, "%s", "traceEvents: an event is not an object");
	if (ctx == C_EVENT && k == E_ARGS)
		return fail(p, "field %s: expected an object", "args");
	if (ctx == C_SKIP || k == K_NONE)
		return 1;
	if (ctx == C_TOP || ctx == C_DIST) {
		if (k == T_EVENTS || k == T_DIST || k == T_DEVS)
			return 1; /* not an array / object: ignored like unknown */
		if (any_int((const char *)s, len, isstr, &v) < 0)
			return fail(p, "field %s: expected an integer", keyname(k));
		if (k == T_BASE) {
			if (v < 0 || v > MAX_TIME)
				return fail(p, "field %s: out of range", keyname(k));
			p->t->base_ns = v, p->set_base = 1;
		}
		else if (k == D_RANK)
			p->t->rank = v, p->set_rank = 1;
		else if (k == D_WORLD)
			p->t->world = v, p->set_world = 1;
		return 1;
	}
	if (ctx == C_EVENT) {
		c->have |= BIT(k);
		switch (k) {
		case E_PH:
			if (isstr <= 0)
				return fail(p, "field %s: expected a string", "ph");
			c->ph = len == 1 ? (char)s[0] : '?';
			return 1;
		case E_CAT:
			if (isstr <= 0)
				return fail(p, "field %s: expected a string", "cat");
			c->catlen = len < sizeof(c->cat) ? len : sizeof(c->cat) - 1;
			memcpy(c->cat, s, c->catlen);
			return 1;
		case E_NAME:
			if (isstr <= 0)
				return fail(p, "field %s: expected a string", "name");
			copy_str(&c->name, &c->namelen, &c->namecap, s, len);
			return 1;
		case E_PID:
		case E_TID: {
			int64_t *dst = k == E_PID ? &c->pid : &c->tid;
			int *isname = k == E_PID ? &c->pid_str : &c->tid_str;

			if (isstr < 0)
				return fail(p, "field %s: expected a number or a string", keyname(k));
			if (isstr > 0) {
				if (str_id((const char *)s, len, dst) < 0)
					*isname = 1;
			} else if (to_i64((const char *)s, len, dst) < 0) {
				return fail(p, "field %s: expected an integer", keyname(k));
			}
			return 1;
		}
		case E_TS:
		case E_DUR:
			if (isstr < 0 || (isstr > 0 && !number_text((const char *)s, len)))
				return fail(p, "field %s: expected a number", keyname(k));
			if (us_to_ns((const char *)s, len, k == E_TS ? &c->ts : &c->dur) < 0)
				return fail(p, "field %s: number out of range", keyname(k));
			if (k == E_DUR && c->dur < 0)
				return fail(p, "field %s: negative duration", "dur");
			return 1;
		}
		return 1;
	}
	/* C_ARGS */
	c->have |= BIT(k);
	switch (k) {
	case A_COLL:
	case A_DTYPE:
	case A_PGNAME:
	case A_SYNCKIND:
	case A_NAME:
	case A_PGRANKS:
	case A_DIMS:
	case A_ITYPE:
	case A_MODH:
		if (isstr <= 0) {
			if (k == A_DIMS || k == A_PGRANKS || k == A_ITYPE || k == A_MODH)
				return 1; /* null or a bare number: nothing to keep */
			return fail(p, "field %s: expected a string", keyname(k));
		}
		switch (k) {
		case A_COLL:
			c->cm.name = intern_get(&p->t->str, (const char *)s, len), c->cm_any = 1;
			break;
		case A_DTYPE:
			c->cm.dtype = intern_get(&p->t->str, (const char *)s, len), c->cm_any = 1;
			break;
		case A_PGNAME:
			c->cm.pg = intern_get(&p->t->str, (const char *)s, len), c->cm_any = 1;
			break;
		case A_PGRANKS:
			c->cm.pgr = intern_get(&p->t->str, (const char *)s, len), c->cm_any = 1;
			break;
		case A_DIMS:
			c->dims = intern_get(&p->t->str, (const char *)s, len);
			break;
		case A_ITYPE:
			break; /* a bare string: not the list PyTorch writes */
		case A_MODH:
			c->modh = intern_get(&p->t->str, (const char *)s, len);
			break;
		case A_SYNCKIND:
#define SK(lit) (len == sizeof(lit) - 1 && memcmp(s, lit, len) == 0)
			c->synckind = SK("Stream Sync") ? SYNC_STREAM :
			    SK("Event Sync") ? SYNC_EVENT :
			    SK("Stream Wait Event") ? SYNC_WAIT_EVENT :
			    SK("Context Sync") ? SYNC_CONTEXT : SYNC_OTHER;
#undef SK
			break;
		case A_NAME:
			copy_str(&c->aname, &c->anamelen, &c->anamecap, s, len);
			break;
		}
		return 1;
	}
	if (k == A_SEQNR) {
		/* a hint for rule 7 only: anything but a count is passed over */
		if (any_int((const char *)s, len, isstr, &v) == 0 && v >= 0 &&
		    v < (int64_t)NO_CORR)
			c->seqnr = v;
		return 1;
	}
	if (any_int((const char *)s, len, isstr, &v) < 0)
		return fail(p, "field %s: expected an integer", keyname(k));
	switch (k) {
	case A_CORR:
		c->corr = v;
		break;
	case A_STREAM:
		c->stream = v;
		break;
	case A_DEVICE:
		c->device = v;
		break;
	case A_BYTES:
		c->bytes = v < 0 ? 0 : (uint64_t)v;
		break;
	case A_INNEL:
		c->cm.in_nelems = v, c->cm_any = 1;
		break;
	case A_OUTNEL:
		c->cm.out_nelems = v, c->cm_any = 1;
		break;
	case A_GSIZE:
		c->cm.gsize = v, c->cm_any = 1;
		break;
	case A_SEQ:
		c->cm.seq = v, c->cm_any = 1;
		break;
	case A_WSTREAM:
		c->wstream = v;
		break;
	case A_WCORR:
		c->wcorr = v;
		break;
	case A_TALLOC:
		c->talloc = v;
		break;
	case A_TRES:
		c->tres = v;
		break;
	case A_MBYTES:
		c->mbytes = v;
		break;
	case A_DEVTYPE:
		c->devtype = v;
		break;
	}
	return 1;
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
		return fail(p, "string longer than %s bytes", "1048576");
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
		return fail(p, "nesting deeper than %s levels", "64");
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
			return fail(p, "field %s: expected an array", "traceEvents");
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
			return fail(p, "%s", "traceEvents: an event is not an object");
		cur_reset(&p->c);
		nc = C_EVENT;
	} else if (parent == C_EVENT && k == E_ARGS) {
		if (!is_map)
			return fail(p, "field %s: expected an object", "args");
		nc = C_ARGS;
	} else if (parent == C_EVENT && k != K_NONE) {
		return fail(p, "field %s: expected %s", keyname(k), expects(k));
	} else if (parent == C_ARGS && (k == A_DIMS || k == A_PGRANKS || k == A_ITYPE)) {
		p->c.caplen = 0;
		cap_put(&p->c, is_map ? "{" : "[", 1);
		p->capkey = k;
		p->capdepth = p->depth + 1;
		nc = C_CAPTURE;
	} else if (parent == C_ARGS && k != K_NONE) {
		return fail(p, "field %s: expected %s", keyname(k), expects(k));
	} else
		nc = C_SKIP;
	p->depth++;
	p->ctx[p->depth] = (unsigned char)nc;
	p->first[p->depth] = 1;
	p->key = K_NONE;
	return 1;
}

static void keep_event(struct jp *p);

/* The pair of an event's Input Dims and Input type (trace.shp). */
uint32_t
shapes_pair(struct trace *t, uint32_t dims, uint32_t types)
{
	uint32_t key[2] = { dims, types }, id;

	if (dims == KG_NONE && types == KG_NONE)
		return KG_NONE;
	id = intern_get(&t->shk, (const char *)key, sizeof(key));
	if (id == t->nshp) {
		struct shpair sp = { dims, types };

		VEC_PUSH(t->shp, t->nshp, t->capshp, sp);
	}
	return id;
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


void
skip_add(struct skips *k, const char *name, size_t len, int64_t n)
{
	int i;

	for (i = 0; i < k->used; i++)
		if (k->len[i] == len && memcmp(k->name[i], name, len) == 0) {
			k->n[i] += n;
			return;
		}
	if (k->used == NSKIP) {
		k->other += n;
		return;
	}
	memcpy(k->name[i], name, len);
	k->name[i][len] = '\0';
	k->len[i] = len;
	k->n[i] = n;
	k->used++;
}

static void
skip_count(struct jp *p, const char *what, const char *s, size_t len)
{
	char buf[48];
	int n;

	n = snprintf(buf, sizeof(buf), "%s%.*s", what, (int)(len > 40 ? 40 : len), s);
	if (n >= (int)sizeof(buf))
		n = sizeof(buf) - 1;
	skip_add(&p->skips, buf, (size_t)n, 1);
}

static void
skip_flush(struct jp *p)
{
	int i;

	for (i = 0; i < p->skips.used; i++)
		kg_cov_add(&p->t->cov, p->skips.name[i], p->skips.n[i]);
	if (p->skips.other)
		kg_cov_add(&p->t->cov, "skip:(other)", p->skips.other);
}

/*
 * Communication ops without NCCL metadata (PyTorch before 2.2): the
 * message is the first input, so its element count is the product of the
 * first list of Input Dims and its type the first of Input type, e.g.
 * c10d::alltoall_base_ with [[6144], [6144], ...] and ["float", ...]. An
 * all-reduce of a bucket's TensorList has none there ([[], ...]), but the
 * nccl:all_reduce annotation inside it has ([[394241]], ["float"]:
 * param_dlrm_8rank_v100), so those annotations are read too.
 */
static void
comm_op_size(struct trace *t, struct cur *c)
{
	const char *d, *ty, *q;
	int64_t n = 1, v;
	int any = 0;

	if (c->dims == KG_NONE || c->itypes == KG_NONE)
		return;
	if (!(c->namelen > 6 && memcmp(c->name, "c10d::", 6) == 0) &&
	    !(c->namelen > 5 && memcmp(c->name, "nccl:", 5) == 0) &&
	    !(c->namelen == 18 && memcmp(c->name, "record_param_comms", 18) == 0))
		return;
	d = t->str.str[c->dims];
	if (strncmp(d, "[[", 2) != 0)
		return;
	for (q = d + 2; *q != ']' && *q != '\0';) {
		char *end;

		v = strtoll(q, &end, 10);
		if (end == q || v < 0 || (v > 0 && n > INT64_MAX / v))
			return;
		n *= v;
		any = 1;
		q = *end == ',' ? end + 1 : end;
	}
	ty = t->str.str[c->itypes];
	if (!any || strncmp(ty, "[\"", 2) != 0)
		return;
	q = strchr(ty + 2, '"');
	if (q == NULL || q == ty + 2)
		return;
	c->cm.in_nelems = n;
	c->cm.dtype = intern_get(&t->str, ty + 2, (size_t)(q - (ty + 2)));
	c->cm_any = 1;
}

/*
 * An "nn.Module: CLASS_N" call on a CPU thread, kept aside; 0 when it is
 * not one (no instance number, no time, no thread).
 */
static int
module_call(struct trace *t, const struct cur *c)
{
	struct modspan m;
	const char *n = c->name + 11;
	size_t len = c->namelen - 11, k = len;
	int32_t v = 0, mul = 1;

	while (k > 0 && n[k - 1] >= '0' && n[k - 1] <= '9' && mul < 100000000)
		v += (n[k - 1] - '0') * mul, mul *= 10, k--;
	if (k == len || k < 2 || n[k - 1] != '_' || !(c->have & BIT(E_TS)) ||
	    !(c->have & BIT(E_DUR)) || c->pid_str || c->tid_str ||
	    !(c->have & BIT(E_PID)) || !(c->have & BIT(E_TID)))
		return 0;
	m.ts = c->ts;
	m.end = c->ts + c->dur;
	m.proc = trace_proc(t, c->pid, c->tid, 0);
	m.cls = intern_get(&t->str, n, k - 1);
	m.inst = v;
	m.path = 0;
	VEC_PUSH(t->mod, t->nmod, t->capmod, m);
	return 1;
}

/*
 * An allocator event of a GPU ("[memory]", Device Type 1: CUDA) on a CPU
 * thread, kept aside: PyTorch's profile_memory records each allocation
 * and free with its size and the allocator's totals after it. 0 when it
 * is not one (another device type, no time or thread): skipped then.
 */
static int
memory_event(struct trace *t, const struct cur *c)
{
	struct memev m;

	if (c->devtype != 1 || !(c->have & BIT(E_TS)) || c->pid_str || c->tid_str ||
	    !(c->have & BIT(E_PID)) || !(c->have & BIT(E_TID)))
		return 0;
	m.ts = c->ts;
	m.proc = trace_proc(t, c->pid, c->tid, 0);
	m.bytes = c->mbytes;
	m.alloc = c->talloc;
	m.reserved = c->tres;
	VEC_PUSH(t->mem, t->nmem, t->capmem, m);
	return 1;
}

/*
 * An op's "Module Hierarchy" (PyTorch's with_modules, TorchScript
 * models: "top(GPT)::forward.layers.0(Block)::forward.attn(Attention)"):
 * each module in it that has an instance number ("0(Block)", "h_3(Block)")
 * is called around the op. Its span (kept with the nn.Module calls) grows
 * to hold the op, or a new one starts where the last of its class on the
 * thread was another instance.
 */
static void
module_path(struct trace *t, const struct ev *e, const char *h)
{
	const char *p = h;

	while ((p = strchr(p, '(')) != NULL) {
		const char *q = p, *cls = p + 1, *end = strchr(cls, ')');
		int32_t v = 0, mul = 1;
		uint32_t id;
		size_t i;

		p++;
		if (end == NULL || end == cls)
			break;
		while (q > h && q[-1] >= '0' && q[-1] <= '9' && mul < 100000000)
			v += (q[-1] - '0') * mul, mul *= 10, q--;
		if (mul == 1)
			continue; /* no instance number */
		id = intern_get(&t->str, cls, (size_t)(end - cls));
		for (i = t->nmod; i-- > 0;)
			if (t->mod[i].proc == e->proc && t->mod[i].cls == id)
				break;
		if (i != SIZE_MAX && t->mod[i].inst == v && t->mod[i].path) {
			if (e->ts + e->dur > t->mod[i].end)
				t->mod[i].end = e->ts + e->dur;
		} else {
			struct modspan m;

			m.ts = e->ts, m.end = e->ts + e->dur;
			m.proc = e->proc, m.cls = id, m.inst = v, m.path = 1;
			VEC_PUSH(t->mod, t->nmod, t->capmod, m);
		}
	}
}

#define CATIS(lit) (c->catlen == sizeof(lit) - 1 && memcmp(c->cat, lit, c->catlen) == 0)

/* The event is complete: classify it, keep it or count it as skipped. */
static void
keep_event(struct jp *p)
{
	struct trace *t = p->t;
	struct cur *c = &p->c;
	struct ev e;
	int cls;

	t->nevents++;
	if (!(c->have & BIT(E_PH))) {
		kg_cov_add(&t->cov, "missing:ph", 1);
		return;
	}
	if (c->ph == 'M') {
		if (c->namelen == 11 && memcmp(c->name, "thread_name", 11) == 0 &&
		    (c->have & BIT(E_PID)) && (c->have & BIT(E_TID)) &&
		    !c->pid_str && !c->tid_str && c->anamelen > 0) {
			uint32_t i = trace_proc(t, c->pid, c->tid, 0);

			t->proc[i].name = intern_get(&t->str, c->aname, c->anamelen);
		}
		return; /* metadata: not an event of the trace's timeline */
	}
	if (c->ph == 'i' && c->namelen == 8 && memcmp(c->name, "[memory]", 8) == 0 &&
	    memory_event(t, c))
		return;
	if (c->ph != 'X') {
		if (c->catlen == 4 && memcmp(c->cat, "ac2g", 4) == 0 && p->skips.used > 0 &&
		    p->skips.len[0] == 9 && memcmp(p->skips.name[0], "skip:ac2g", 9) == 0) {
			p->skips.n[0]++; /* the common case, without formatting */
			return;
		}
		if (c->catlen)
			skip_count(p, "skip:", c->cat, c->catlen);
		else
			skip_count(p, "skip:ph=", &c->ph, 1);
		return;
	}
	if (CATIS("cpu_op") || CATIS("Operator"))
		cls = EV_OP;
	else if (CATIS("user_annotation"))
		cls = EV_ANNOT;
	else if (CATIS("cuda_runtime") || CATIS("Runtime") || CATIS("cuda_driver"))
		cls = EV_RT;
	else if (CATIS("kernel") || CATIS("Kernel"))
		cls = EV_KERN;
	else if (CATIS("gpu_memcpy") || CATIS("Memcpy"))
		cls = EV_CPY;
	else if (CATIS("gpu_memset") || CATIS("Memset"))
		cls = EV_SET;
	else if (CATIS("cuda_sync"))
		cls = EV_SYNC;
	else if (CATIS("python_function") && c->namelen > 11 &&
	    memcmp(c->name, "nn.Module: ", 11) == 0 && module_call(t, c))
		return;
	else {
		skip_count(p, "skip:", c->catlen ? c->cat : "(none)", c->catlen ? c->catlen : 6);
		return;
	}
	if (cls == EV_OP && c->namelen > 13 && memcmp(c->name, "ProfilerStep#", 13) == 0)
		cls = EV_ANNOT; /* PyTorch 1.8 files step ranges as Operator */
	if (!(c->have & BIT(E_TS))) {
		kg_cov_add(&t->cov, "missing:ts", 1);
		return;
	}
	if (!(c->have & BIT(E_DUR))) {
		kg_cov_add(&t->cov, "missing:dur", 1);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ts = c->ts;
	e.dur = c->dur;
	if (c->corr >= (int64_t)NO_CORR) {
		snprintf(p->err, sizeof(p->err), "field args.correlation: out of range");
		return;
	}
	e.corr = c->corr < 0 ? NO_CORR : (uint32_t)c->corr;
	if (cls == EV_OP) /* an op has no correlation: corr keeps its sequence number */
		e.corr = c->seqnr < 0 ? NO_CORR : (uint32_t)c->seqnr;
	e.name = intern_get(&t->str, c->name ? c->name : "", c->namelen);
	e.shapes = shapes_pair(t, c->dims, c->itypes);
	e.extra = KG_NONE;
	e.cls = (uint8_t)cls;
	if (cls == EV_KERN || cls == EV_CPY || cls == EV_SET || cls == EV_SYNC) {
		/* GPU side: (device, stream) from args, else (pid, tid). */
		int64_t dev = c->device >= 0 ? c->device : c->pid;
		int64_t str = c->stream;

		if (str < 0 && cls != EV_SYNC)
			str = c->tid;
		if (c->device < 0 && c->pid_str) {
			kg_cov_add(&t->cov, "missing:device", 1);
			return;
		}
		if (c->stream < 0 && c->tid_str && cls != EV_SYNC) {
			kg_cov_add(&t->cov, "missing:stream", 1);
			return;
		}
		if (cls == EV_SYNC) {
			struct syncrec sr;

			sr.kind = c->synckind < 0 ? SYNC_OTHER : c->synckind;
			sr.stream = c->stream;
			sr.wait_stream = c->wstream;
			sr.wait_corr = c->wcorr;
			sr.device = dev;
			e.proc = KG_NONE;
			e.extra = (uint32_t)t->nsync;
			VEC_PUSH(t->sync, t->nsync, t->capsync, sr);
		} else {
			e.proc = trace_proc(t, dev, str, 1);
		}
		if (cls == EV_CPY || cls == EV_SET) {
			e.extra = (uint32_t)t->nbytes;
			VEC_PUSH(t->bytes, t->nbytes, t->capbytes, c->bytes);
		}
		if (c->corr < 0)
			kg_cov_add(&t->cov, "missing:correlation", 1);
	} else {
		if (c->pid_str || c->tid_str || !(c->have & BIT(E_PID)) ||
		    !(c->have & BIT(E_TID))) {
			kg_cov_add(&t->cov, c->pid_str || !(c->have & BIT(E_PID)) ?
			    "missing:pid" : "missing:tid", 1);
			return;
		}
		e.proc = trace_proc(t, c->pid, c->tid, 0);
		if (cls == EV_RT && c->corr < 0)
			kg_cov_add(&t->cov, "missing:correlation", 1);
	}
	if (cls == EV_OP && c->modh != KG_NONE) {
		/* extends the spans of ops before it, which a second half
		 * does not have */
		p->tainted |= p->second;
		module_path(t, &e, t->str.str[c->modh]);
	}
	if ((cls == EV_OP || cls == EV_ANNOT) && !c->cm_any)
		comm_op_size(t, c);
	if (c->cm_any && (cls == EV_OP || cls == EV_KERN || cls == EV_ANNOT)) {
		e.extra = (uint32_t)t->ncoll;
		VEC_PUSH(t->coll, t->ncoll, t->capcoll, c->cm);
	}
	VEC_PUSH(t->ev, t->nev, t->capev, e);
}

/* Input: plain or gzip bytes, hashed as read. */
struct input {
	FILE *fp;
	int fd;              /* read by pread where fp is NULL (split.c's reading of a gzip file; tail_hash) */
	int gz, zinit, zend, eof;
	z_stream zs;
	unsigned char *raw;
	XXH3_state_t *h;
	uint64_t pos, limit; /* bytes read; where to stop for now (split.c) */
};

static int
raw_read(struct input *in, unsigned char *buf, size_t cap, size_t *n, char *err, size_t errlen)
{
	if (in->limit - in->pos < cap)
		cap = (size_t)(in->limit - in->pos);
	if (cap == 0) {
		*n = 0; /* at the limit: not the end */
		return 0;
	}
	if (in->fp == NULL) {
		ssize_t got = pread(in->fd, buf, cap, (off_t)in->pos);

		if (got < 0) {
			snprintf(err, errlen, "read error: %s", strerror(errno));
			return -1;
		}
		*n = (size_t)got;
	} else {
		*n = fread(buf, 1, cap, in->fp);
	}
	if (*n == 0 && in->fp != NULL && ferror(in->fp)) {
		snprintf(err, errlen, "read error: %s", strerror(errno ? errno : EIO));
		return -1;
	}
	if (*n > 0)
		XXH3_64bits_update(in->h, buf, *n);
	else
		in->eof = 1;
	in->pos += *n;
	return 0;
}

/* Fill buf with up to cap JSON bytes; *n = 0 at the end. */
static int
input_read(struct input *in, unsigned char *buf, size_t cap, size_t *n,
    uint64_t off, char *err, size_t errlen)
{
	size_t got;
	int rc;

	if (!in->gz)
		return in->eof ? (*n = 0, 0) : raw_read(in, buf, cap, n, err, errlen);
	in->zs.next_out = buf;
	in->zs.avail_out = (uInt)cap;
	while (in->zs.avail_out > 0) {
		if (in->zs.avail_in == 0 && !in->eof) {
			if (raw_read(in, in->raw, CHUNK, &got, err, errlen) < 0)
				return -1;
			in->zs.next_in = in->raw;
			in->zs.avail_in = (uInt)got;
		}
		if (in->zs.avail_in == 0 && in->eof) {
			if (!in->zend) {
				snprintf(err, errlen, "byte %llu: truncated gzip data",
				    (unsigned long long)(off + cap - in->zs.avail_out));
				return -1;
			}
			break;
		}
		if (in->zend) { /* another gzip member follows */
			inflateReset(&in->zs);
			in->zend = 0;
		}
		rc = inflate(&in->zs, Z_NO_FLUSH);
		if (rc == Z_STREAM_END) {
			in->zend = 1;
		} else if (rc != Z_OK && rc != Z_BUF_ERROR) {
			snprintf(err, errlen, "corrupt gzip data (%s)",
			    in->zs.msg ? in->zs.msg : "inflate failed");
			return -1;
		}
	}
	*n = cap - in->zs.avail_out;
	return 0;
}

int
input_next(struct input *in, unsigned char *buf, size_t cap, size_t *n)
{
	char err[256];

	return input_read(in, buf, cap, n, 0, err, sizeof(err));
}

struct input *
input_open_fd(int fd)
{
	struct input *in = xcalloc(1, sizeof(*in));

	in->fd = fd;
	in->gz = 1;
	in->limit = UINT64_MAX;
	in->raw = xmalloc(CHUNK);
	in->h = XXH3_createState();
	if (in->h == NULL || inflateInit2(&in->zs, 16 + MAX_WBITS) != Z_OK) {
		input_close(in);
		return NULL;
	}
	in->zinit = 1;
	XXH3_64bits_reset(in->h);
	return in;
}

uint64_t
input_hash(struct input *in)
{
	return XXH3_64bits_digest(in->h);
}

void
input_close(struct input *in)
{
	if (in->zinit)
		inflateEnd(&in->zs);
	if (in->h != NULL)
		XXH3_freeState(in->h);
	free(in->raw);
	free(in);
}

/* Read in from where it is to its end, hashing what it reads, into buf (CHUNK bytes). */
static int
hash_rest(struct input *in, unsigned char *buf, char *err, size_t errlen)
{
	size_t n;

	do {
		if (raw_read(in, buf, CHUNK, &n, err, errlen) < 0)
			return -1;
	} while (n > 0);
	return 0;
}

/*
 * The file's end hashed on a thread of its own, from where the first
 * half stopped (the second half's thread parsed it, not hashing: a hash
 * goes in order), while the caller builds the graph: it is the header's,
 * written after the build's analysis.
 */
struct tail_hash {
	pthread_t th;
	struct input in;         /* by pread of a dup of the input's fd, its hash so far */
	unsigned char *buf;      /* CHUNK bytes, the parser's: no new pages for it */
	int failed;
	char err[128];
};

static void *
tail_run(void *arg)
{
	struct tail_hash *th = arg;

	th->failed = hash_rest(&th->in, th->buf, th->err, sizeof(th->err)) < 0;
	return NULL;
}

/*
 * Hash in's file from in->pos to its end on a thread, for t, reading
 * into buf (CHUNK bytes, the thread's then); 0, or -1 (not started).
 */
static int
tail_start(struct trace *t, const struct input *in, int fd, unsigned char *buf)
{
	struct tail_hash *th = xcalloc(1, sizeof(*th));

	th->in.fd = dup(fd);
	th->in.pos = in->pos;
	th->in.limit = UINT64_MAX;
	th->in.h = XXH3_createState();
	th->buf = buf;
	if (th->in.h != NULL)
		XXH3_copyState(th->in.h, in->h);
	if (th->in.h == NULL || th->in.fd < 0 ||
	    pthread_create(&th->th, NULL, tail_run, th) != 0) {
		if (th->in.fd >= 0)
			close(th->in.fd);
		XXH3_freeState(th->in.h);
		free(th);
		return -1;
	}
	t->tail = th;
	return 0;
}

int
trace_hash(struct trace *t, char *err, size_t errlen)
{
	struct tail_hash *th = t->tail;
	int rc = 0;

	if (th == NULL)
		return 0;
	pthread_join(th->th, NULL);
	if (th->failed) {
		snprintf(err, errlen, "%s", th->err);
		rc = -1;
	}
	t->xxh3 = XXH3_64bits_digest(th->in.h);
	free(th->buf);
	close(th->in.fd);
	XXH3_freeState(th->in.h);
	free(th);
	t->tail = NULL;
	return rc;
}

/* scan_strings byte by byte, over b[i..n). */
static size_t
scan_bytes(struct strscan *s, const unsigned char *b, size_t i, size_t n)
{
	while (i < n) {
		if (!s->in) {
			const unsigned char *q = memchr(b + i, '"', n - i);

			if (q == NULL)
				return n;
			i = (size_t)(q - b) + 1;
			s->in = 1;
			s->len = 0;
			s->skip = 0;
			continue;
		}
		for (; i < n; i++) {
			unsigned char c = b[i];

			if (s->skip != 0) {
				/* \uXXXX: the u and 4 digits; other escapes: 1 */
				s->skip = s->skip == -1 ? (c == 'u' ? 4 : 0) : s->skip - 1;
				continue;
			}
			if (c == '"') {
				s->in = 0;
				i++;
				break;
			}
			if (c == '\\')
				s->skip = -1;
			if (++s->len > LONG_STRING)
				return i;
		}
	}
	return n;
}

#define ONES UINT64_C(0x0101010101010101)
#define LOW7 UINT64_C(0x7f7f7f7f7f7f7f7f)

/* 0x80 in each byte of x that is zero, 0 in the others (no carries between bytes). */
static inline uint64_t
zero_bytes(uint64_t x)
{
	return ~(((x & LOW7) + LOW7) | x | LOW7);
}

/*
 * The index in b[0..n) of the byte that makes a string too long, or n.
 * Eight bytes at a time: a word without a backslash is settled by its
 * quotes alone (each one opens or closes a string, so their count says
 * whether one is open after the word, and the last one where it began),
 * which is most of a trace; a word with one, an escape pending, or a
 * string that could pass the limit in it goes byte by byte, so the
 * index is exact. A string closed in the word was checked before it.
 */
size_t
scan_strings(struct strscan *s, const unsigned char *b, size_t n)
{
	size_t i = 0;

	/* a string opened inside a word cannot pass the limit there */
	_Static_assert(LONG_STRING >= 8, "LONG_STRING below a word");

	while (n - i >= 8) {
		uint64_t w, q, bs;

		memcpy(&w, b + i, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		w = __builtin_bswap64(w); /* the first byte lowest, as ctz reads */
#endif
		q = zero_bytes(w ^ ('"' * ONES));
		bs = zero_bytes(w ^ ('\\' * ONES));
		if (bs != 0 || s->skip != 0 || (s->in && s->len + 8 > LONG_STRING)) {
			size_t e = scan_bytes(s, b, i, i + 8);

			if (e < i + 8)
				return e;
			i += 8;
			continue;
		}
		if (q == 0) {
			if (s->in)
				s->len += 8;
		} else {
			/* the quotes counted (a byte's sum in the top one), the
			 * last one found: a string open after it began there */
			unsigned nq = (unsigned)(((q >> 7) * ONES) >> 56);
			unsigned last = (unsigned)(63 - __builtin_clzll(q)) >> 3;

			s->in ^= nq & 1;
			if (s->in)
				s->len = 7 - last;
		}
		i += 8;
	}
	return scan_bytes(s, b, i, n);
}

/* Reading ahead (common/ahead.h): input_read's step, and where it is. */
struct ahead_in {
	struct input *in;
	uint64_t off;
	struct strscan scan; /* on the thread too: a piece's hint is scan_strings' */
};

static void
input_ahead(void *arg, struct ahead_piece *p, size_t cap)
{
	struct ahead_in *a = arg;

	if (input_read(a->in, p->buf, cap, &p->n, a->off, p->err, sizeof(p->err)) < 0) {
		p->rc = -1;
		return;
	}
	a->off += p->n;
	p->hint = scan_strings(&a->scan, p->buf, p->n);
	p->rc = p->n > 0;
}

static void
yajl_msg(yajl_handle h, const unsigned char *buf, size_t len, char *out, size_t outlen)
{
	unsigned char *m = yajl_get_error(h, 0, buf, len);
	char *nl;

	snprintf(out, outlen, "%s", (char *)m);
	yajl_free_error(h, m);
	if ((nl = strchr(out, '\n')) != NULL)
		*nl = '\0';
}

int
trace_read(struct trace *t, FILE *fp, char *err, size_t errlen)
{
	struct jp p;
	struct input in;
	struct strscan scan = { 0, 0, 0 };
	unsigned char *buf = xmalloc(CHUNK);
	size_t n = 0, long_at;
	uint64_t off = 0;
	yajl_handle h;
	yajl_status st;
	struct ahead *ah = NULL;
	struct ahead_in ai;
	struct ahead_piece cur;
	unsigned char *cbuf = buf; /* the chunk parsed: buf, or cur's */
	struct half *half = NULL, *gzhalf = NULL;
	uint64_t gzat = 0, gzlimit = UINT64_MAX; /* a gzip input in two halves (jp.h) */
	int rc = -1, c0, gzknown = 0, hashed = 0; /* hashed: by the second half's thread */

	memset(&p, 0, sizeof(p));
	memset(&in, 0, sizeof(in));
	p.t = t;
	in.fp = fp;
	in.limit = UINT64_MAX;
	in.h = XXH3_createState();
	XXH3_64bits_reset(in.h);
	in.raw = xmalloc(CHUNK);
	h = yajl_alloc(&jp_callbacks, NULL, &p);
	p.h = h;
	/* Sniff gzip by its magic number, not by the file name. */
	c0 = getc(fp);
	if (c0 != EOF) {
		int c1 = getc(fp);

		in.gz = c0 == 0x1f && c1 == 0x8b;
		if (c1 != EOF)
			ungetc(c1, fp);
		if (c1 == EOF || ungetc(c0, fp) == EOF) {
			/* one-byte input, or no pushback room: read it raw */
			in.gz = 0;
			if (c1 == EOF) {
				buf[0] = (unsigned char)c0;
				XXH3_64bits_update(in.h, buf, 1);
				n = 1;
				in.eof = 1;
			}
		}
	}
	if (in.gz) {
		if (inflateInit2(&in.zs, 16 + MAX_WBITS) != Z_OK) {
			snprintf(err, errlen, "cannot initialise zlib");
			goto out;
		}
		in.zinit = 1;
	}
	/* From here, the input is the thread's where there is one. */
	memset(&cur, 0, sizeof(cur));
	ai.in = &in;
	ai.off = 0;
	memset(&ai.scan, 0, sizeof(ai.scan));
	if (n == 0 && !in.gz)
		half = split_start(fp, t->file, &in.limit);
	if (n == 0 && in.gz)
		gzhalf = split_start_gz(fp, t->file, &gzat);
	if (n == 0 && half == NULL && gzhalf == NULL)
		ah = ahead_new(fp, input_ahead, &ai, CHUNK);
again:
	for (;;) {
		if (n == 0 && ah != NULL) {
			ahead_done(ah, &cur);
			if (ahead_next(ah, &cur) < 0) {
				snprintf(err, errlen, "%s", cur.err);
				goto out;
			}
			cbuf = cur.buf;
			n = cur.n;
			long_at = cur.hint;
		} else if (n == 0 && gzhalf != NULL) {
			/* no further than where the second half may begin */
			size_t cap = CHUNK;

			if (!gzknown && off >= gzat) {
				gzlimit = split_gz_limit(gzhalf);
				gzknown = 1;
				if (gzlimit == UINT64_MAX) { /* no second half */
					split_end(gzhalf, 0, t, &p);
					gzhalf = NULL;
				}
			}
			if (!gzknown && gzat - off < cap)
				cap = (size_t)(gzat - off);
			if (gzknown && gzlimit - off < cap)
				cap = (size_t)(gzlimit - off);
			if (cap > 0 && input_read(&in, buf, cap, &n, off, err, errlen) < 0)
				goto out;
			long_at = scan_strings(&scan, cbuf, n);
		} else if (n == 0 && input_read(&in, buf, CHUNK, &n, off, err, errlen) < 0) {
			goto out;
		} else {
			long_at = scan_strings(&scan, cbuf, n);
		}
		if (n == 0)
			break;
		p.base = off;
		st = yajl_parse(h, cbuf, long_at < n ? long_at : n);
		if (st == yajl_status_ok && long_at < n) {
			snprintf(err, errlen, "byte %llu: string longer than %d bytes",
			    (unsigned long long)(off + long_at + 1), MAX_STRING);
			goto out;
		}
		if (st != yajl_status_ok) {
			uint64_t at = off + yajl_get_bytes_consumed(h);

			if (st == yajl_status_client_canceled)
				snprintf(err, errlen, "byte %llu: %s", (unsigned long long)at, p.err);
			else {
				char m[160];

				yajl_msg(h, cbuf, n, m, sizeof(m));
				snprintf(err, errlen, "byte %llu: invalid JSON (%s)",
				    (unsigned long long)at, m);
			}
			goto out;
		}
		off += n;
		n = 0;
	}
	if (gzhalf != NULL && gzknown && off == gzlimit) {
		/* A gzip input's first half read: as for a plain file, below;
		 * the second half's thread read the file to its end. */
		int at_event = p.depth == 2 && p.ctx[2] == C_EVENTS && p.evend == gzlimit;

		hashed = split_end(gzhalf, at_event, t, &p);
		gzhalf = NULL;
		if (hashed)
			goto done;
		/* no: the rest is parsed here */
		gzlimit = UINT64_MAX;
		goto again;
	}
	if (half != NULL) {
		/* the first half read: did it end just after an event of
		 * traceEvents, and did the second parse through? */
		int at_event = p.depth == 2 && p.ctx[2] == C_EVENTS && p.evend == in.limit &&
		    off == in.limit;

		int merged = split_end(half, at_event, t, &p);

		half = NULL;
		if (!merged) {
			/* no: the rest is parsed here */
			in.limit = UINT64_MAX;
			goto again;
		}
		/* the rest hashed, on a thread or here */
		in.limit = UINT64_MAX;
		if (tail_start(t, &in, fileno(fp), buf) == 0) {
			buf = NULL; /* the thread's */
			hashed = 1;
			goto done;
		}
		if (hash_rest(&in, buf, err, errlen) < 0)
			goto out;
		goto done; /* the second half parsed to the end of a whole object */
	}
	if (off == 0) {
		snprintf(err, errlen, "empty input, not a Kineto trace");
		goto out;
	}
	st = yajl_complete_parse(h);
	if (st != yajl_status_ok) {
		snprintf(err, errlen, "byte %llu: truncated JSON (ends inside %s)",
		    (unsigned long long)off,
		    p.depth > 0 && p.ctx[p.depth] == C_EVENT ? "an event" : "a value");
		goto out;
	}
	if (!p.top) {
		snprintf(err, errlen, "not a Kineto trace (not a JSON object)");
		goto out;
	}
	if (p.ctx[1] == C_TOP && !p.seen_events) {
		snprintf(err, errlen, "not a Kineto trace (no traceEvents array)");
		goto out;
	}
done:
	/* Give back the slack of the doubling growth before the build needs memory. */
	if (t->nev > 0 && t->capev > t->nev) {
		t->ev = xrealloc(t->ev, t->nev * sizeof(*t->ev));
		t->capev = t->nev;
	}
	rc = 0;
out:
	if (ah != NULL) {
		ahead_done(ah, &cur);
		ahead_free(ah);
	}
	if (half != NULL)
		split_end(half, 0, t, &p);
	if (gzhalf != NULL)
		split_end(gzhalf, 0, t, &p);
	skip_flush(&p);
	if (!hashed)
		t->xxh3 = XXH3_64bits_digest(in.h);
	XXH3_freeState(in.h);
	if (in.zinit)
		inflateEnd(&in.zs);
	yajl_free(h);
	free(in.raw);
	free(buf);
	free(p.c.name);
	free(p.c.cap);
	free(p.c.aname);
	return rc;
}

void
trace_init(struct trace *t, const char *file)
{
	memset(t, 0, sizeof(*t));
	t->file = file;
	t->rank = t->world = -1;
	intern_init(&t->str);
	intern_init(&t->shk);
	kg_cov_init(&t->cov);
}

void
trace_release(struct trace *t)
{
	char err[128];

	trace_hash(t, err, sizeof(err));
	intern_release(&t->str);
	free(t->ev);
	free(t->coll);
	free(t->pgcfg);
	free(t->dev);
	intern_release(&t->shk);
	free(t->shp);
	free(t->sync);
	free(t->bytes);
	free(t->proc);
	free(t->mod);
	free(t->mem);
	kg_cov_release(&t->cov);
	memset(t, 0, sizeof(*t));
}

uint32_t
trace_proc(struct trace *t, int64_t pid, int64_t tid, int gpu)
{
	struct tproc np;
	size_t i;

	/* Few processors (threads and streams): a linear scan from the end
	 * finds the usual one at once. */
	for (i = t->nproc; i-- > 0;)
		if (t->proc[i].tid == tid && t->proc[i].pid == pid && t->proc[i].gpu == gpu)
			return (uint32_t)i;
	np.pid = pid;
	np.tid = tid;
	np.gpu = gpu;
	np.name = KG_NONE;
	VEC_PUSH(t->proc, t->nproc, t->capproc, np);
	return (uint32_t)(t->nproc - 1);
}
