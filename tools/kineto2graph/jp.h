/*
 * kineto2graph's JSON reader, shared by its files: json.c (the reading),
 * parse.c (where a token sits), fields.c (a value), events.c (an event
 * kept) and split.c (a large file parsed in two halves at once): the
 * parser's state and what they share of it. Private to those files.
 */
#ifndef K2G_JP_H
#define K2G_JP_H

#include <stdint.h>
#include <stdio.h>
#include <yajl_parse.h>

#include "k2g.h"

#define CHUNK (256 * 1024)
#define MAX_DEPTH 64
#define MAX_STRING (1 << 20)

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

/*
 * Skipped events are counted by category. Flows alone are a third of a
 * trace, so the few distinct categories are tallied here and added to the
 * coverage once, at the end (skip_flush).
 */
#define NSKIP 32

struct skips {
	char name[NSKIP][48];
	size_t len[NSKIP];
	int64_t n[NSKIP];
	int used;
	int64_t other;
};

/* The event being read. */
struct cur {
	uint64_t have; /* bit per key */
	char ph;
	char cat[32];
	size_t catlen;
	char *name;
	size_t namelen, namecap;
	int64_t pid, tid;
	int pid_str, tid_str; /* a non-numeric string */
	int64_t ts, dur;
	int64_t corr, stream, device, bytes;
	int64_t seqnr; /* autograd's Sequence number, -1 if none */
	struct collmeta cm;
	int cm_any;
	int synckind;
	int64_t wstream, wcorr;
	char *cap; /* captured compact JSON (Input Dims, Process Group Ranks) */
	size_t caplen, capcap;
	uint32_t dims, pgranks, itypes;
	uint32_t modh;         /* interned "Module Hierarchy", KG_NONE */
	int64_t talloc, tres, mbytes, devtype; /* an allocator event's; -1 if none
	                                          (mbytes: 0) */
	char *aname; /* args.name (metadata events) */
	size_t anamelen, anamecap;
};

struct jp {
	struct trace *t;
	int depth;
	unsigned char ctx[MAX_DEPTH + 1];
	unsigned char first[MAX_DEPTH + 1]; /* capture: no comma needed yet */
	int key;     /* key of the value that comes next */
	int capkey;  /* A_DIMS, A_ITYPE or A_PGRANKS while capturing */
	int capdepth;
	uint32_t pgname, pgranks; /* the pg_config entry being read */
	int pgranks_n;
	struct tdev dev;          /* the deviceProperties entry being read */
	int seen_events;
	int top;     /* the top-level value opened a container */
	struct cur c;
	struct skips skips;
	char err[200];
	/* the split parse (split_read): where the last event ended, in the
	 * file; the second half's flags */
	yajl_handle h;
	uint64_t base, evend;
	int second;   /* this parses the file's second half */
	int tainted;  /* ... and met what needs the first half's events */
	int set_base, set_rank, set_world; /* top-level fields it set */
};

/*
 * YAJL keeps a string that spans chunks and lexes it again from its
 * start at every chunk: a 128 MB string took 32 s to be refused, the
 * time growing with the square of its length. So the chunks are scanned
 * here first, in one pass, for the strings (and keys) in them: one known
 * to hold more than LONG_STRING bytes once decoded (an escape counted as
 * one byte, the least it can be) is refused where that is known, without
 * reading further. Below that, on_scalar and cb_key refuse a string over
 * MAX_STRING exactly, after YAJL lexed at most a few chunks of it.
 */
#define LONG_STRING (2 * MAX_STRING)

struct strscan {
	int in;      /* inside a string */
	int skip;    /* escape bytes still to pass */
	uint64_t len; /* its decoded length, at least */
};

/* The parser's callbacks (parse.c): their context is a struct jp. */
extern const yajl_callbacks jp_callbacks;
/* parse.c: p->err set from fmt; 0, for a callback to return (YAJL stops). */
int jp_fail(struct jp *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The name of key k (enum key) for messages: "args.correlation". */
const char *keyname(int k);
/*
 * fields.c. on_scalar: a scalar value where it sits: number text,
 * string, or (isstr < 0) a literal true/false/null; 1, or 0 with p->err
 * set. cap_put, cap_sep, cap_string: text appended to what is captured
 * (c->cap), a comma where one is due, a string quoted as JSON.
 * cur_reset: the event being read emptied, for the next.
 */
int on_scalar(struct jp *p, const unsigned char *s, size_t len, int isstr);
void cap_put(struct cur *c, const char *s, size_t len);
void cap_sep(struct jp *p);
void cap_string(struct cur *c, const unsigned char *s, size_t len);
void cur_reset(struct cur *c);
/* events.c: the event read is complete: kept, or counted as skipped;
 * p->err set where it cannot be kept. */
void keep_event(struct jp *p);
/* events.c: the skipped events' counts added to the trace's coverage. */
void skip_flush(struct jp *p);
/* The index in b[0..n) of the byte that makes a string too long, or n. */
size_t scan_strings(struct strscan *s, const unsigned char *b, size_t n);
/* Add n to the skipped category name (len bytes; in other once NSKIP are kept). */
void skip_add(struct skips *k, const char *name, size_t len, int64_t n);
/* The pair of an event's Input Dims and Input type (trace.shp). */
uint32_t shapes_pair(struct trace *t, uint32_t dims, uint32_t types);

/*
 * split.c. split_start: the second half of fp parsed on a thread, when
 * the file is worth it; the first half then ends at *limit. NULL if not
 * split. split_end: with take (the first half, read by p into t, ended
 * just after an event of traceEvents at *limit), the second half taken
 * into t where it parsed through (1), else dropped (0); either way its
 * thread joined and its memory freed.
 */
struct half;
struct half *split_start(FILE *fp, const char *file, uint64_t *limit);
int split_end(struct half *b, int take, struct trace *t, struct jp *p);
/*
 * A gzip input in two halves: split_start_gz's thread reads the file
 * on its own, inflating and passing over what the caller parses, finds
 * a place between two events (split_between) from *at on (inflated
 * bytes; the caller parses no further before split_gz_limit, which
 * waits for the place: UINT64_MAX if none), and parses the rest.
 * split_end as above; where it takes the second half, it sets t's hash
 * (the thread read the whole file). NULL if not split.
 */
int split_between(const unsigned char *w, size_t n, size_t *close, size_t *open);
struct half *split_start_gz(FILE *fp, const char *file, uint64_t *at);
uint64_t split_gz_limit(struct half *b);
/* json.c: a gzip file read by pread from fd (its start) for split.c's
 * thread; its next inflated bytes, up to cap (*n = 0 at the end; -1 on
 * an error, which the caller's parse, reading on, tells); its hash. */
struct input;
struct input *input_open_fd(int fd);
int input_next(struct input *in, unsigned char *buf, size_t cap, size_t *n);
uint64_t input_hash(struct input *in);
void input_close(struct input *in);

#endif
