/*
 * kineto2graph's JSON reader, a field's value: each scalar YAJL hands
 * the parser (on_scalar) decoded where it sits, as parse.c's context
 * stack says: an event's field or args entry into the event being read
 * (struct cur), the top level's and distributedInfo's integers and a
 * pg_config entry's name and ranks, a deviceProperties entry's fields,
 * or text captured as compact JSON (Input Dims, Input type, Process
 * Group Ranks: cap_*). Numbers are parsed strictly, by hand: microseconds
 * to integer nanoseconds exactly, integers written as numbers or in
 * strings (decimal, hex handles). A known field of the wrong type is an
 * error (jp_fail); an unknown one passes. Where a value sits is parse.c's;
 * what a complete event becomes, events.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "jp.h"
#include "k2g.h"
#include "util.h"

/* Times (ts, dur, baseTimeNanoseconds) are kept within half the int64
 * range, so that sums and differences of two never overflow: +-146 years
 * of nanoseconds. */
#define MAX_TIME (INT64_MAX / 2)

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

void
cap_put(struct cur *c, const char *s, size_t len)
{
	if (c->caplen + len + 1 > c->capcap)
		grow(&c->cap, &c->capcap, c->caplen + len + 1, 1);
	memcpy(c->cap + c->caplen, s, len);
	c->caplen += len;
}

void
cap_sep(struct jp *p)
{
	if (!p->first[p->depth])
		cap_put(&p->c, ",", 1);
	p->first[p->depth] = 0;
}

void
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

void
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
int
on_scalar(struct jp *p, const unsigned char *s, size_t len, int isstr)
{
	struct cur *c = &p->c;
	int ctx = p->ctx[p->depth], k = p->key;
	int64_t v;

	if (isstr > 0 && len > MAX_STRING)
		return jp_fail(p, "string longer than %s bytes", "1048576");
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
			return jp_fail(p, "field %s: expected an integer", keyname(G_RANKS));
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
		return jp_fail(p, "%s", "traceEvents: an event is not an object");
	if (ctx == C_EVENT && k == E_ARGS)
		return jp_fail(p, "field %s: expected an object", "args");
	if (ctx == C_SKIP || k == K_NONE)
		return 1;
	if (ctx == C_TOP || ctx == C_DIST) {
		if (k == T_EVENTS || k == T_DIST || k == T_DEVS)
			return 1; /* not an array / object: ignored like unknown */
		if (any_int((const char *)s, len, isstr, &v) < 0)
			return jp_fail(p, "field %s: expected an integer", keyname(k));
		if (k == T_BASE) {
			if (v < 0 || v > MAX_TIME)
				return jp_fail(p, "field %s: out of range", keyname(k));
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
				return jp_fail(p, "field %s: expected a string", "ph");
			c->ph = len == 1 ? (char)s[0] : '?';
			return 1;
		case E_CAT:
			if (isstr <= 0)
				return jp_fail(p, "field %s: expected a string", "cat");
			c->catlen = len < sizeof(c->cat) ? len : sizeof(c->cat) - 1;
			memcpy(c->cat, s, c->catlen);
			return 1;
		case E_NAME:
			if (isstr <= 0)
				return jp_fail(p, "field %s: expected a string", "name");
			copy_str(&c->name, &c->namelen, &c->namecap, s, len);
			return 1;
		case E_PID:
		case E_TID: {
			int64_t *dst = k == E_PID ? &c->pid : &c->tid;
			int *isname = k == E_PID ? &c->pid_str : &c->tid_str;

			if (isstr < 0)
				return jp_fail(p, "field %s: expected a number or a string", keyname(k));
			if (isstr > 0) {
				if (str_id((const char *)s, len, dst) < 0)
					*isname = 1;
			} else if (to_i64((const char *)s, len, dst) < 0) {
				return jp_fail(p, "field %s: expected an integer", keyname(k));
			}
			return 1;
		}
		case E_TS:
		case E_DUR:
			if (isstr < 0 || (isstr > 0 && !number_text((const char *)s, len)))
				return jp_fail(p, "field %s: expected a number", keyname(k));
			if (us_to_ns((const char *)s, len, k == E_TS ? &c->ts : &c->dur) < 0)
				return jp_fail(p, "field %s: number out of range", keyname(k));
			if (k == E_DUR && c->dur < 0)
				return jp_fail(p, "field %s: negative duration", "dur");
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
			return jp_fail(p, "field %s: expected a string", keyname(k));
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
		return jp_fail(p, "field %s: expected an integer", keyname(k));
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
