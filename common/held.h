/*
 * held: records kept as read, their bytes, to write on unchanged: the
 * filters that change a few tasks of a section (graph-scale-dp,
 * graph-retime) hold the section's records until its end, then write the
 * changed tasks anew and every other record as it came. Records are
 * numbered from 0 in the order added; held_reset forgets them, keeping
 * the memory. The bytes are owned by the held.
 */
#ifndef KG_HELD_H
#define KG_HELD_H

#include <stddef.h>
#include <stdint.h>

struct held {
	char *buf;
	size_t len, cap;
	size_t *off;      /* by record: where it starts in buf */
	uint8_t *type;    /* by record: its KG_R_ type */
	size_t n, capoff, captype;
};

void held_add(struct held *h, int type, const char *bytes, size_t n);
/* Record i's bytes, its length in *len. */
const char *held_rec(const struct held *h, size_t i, size_t *len);
void held_reset(struct held *h);
void held_release(struct held *h);

/*
 * The input's zstd frames kept compressed beside the held records they
 * hold, so that a frame none of whose records changed goes out as it
 * came, neither encoded nor compressed again (graphsim does so as it
 * streams). The reader must keep frames (r->keep_frames). A unit is the
 * frames that end at one record boundary: held records [first, last),
 * dirty when a record not held (a header written anew, a sim record
 * dropped) was among them, or one of its records is written anew.
 */
struct held_unit {
	size_t off, len;
	size_t first, last;
	int dirty;
	int gone; /* its records' bytes were let go (hf_sparse) */
};

struct held_frames {
	char *z;
	size_t zlen, zcap;
	struct held_unit *u;
	size_t nu, capu;
	size_t first;  /* the next unit's first record; SIZE_MAX: dropped */
	int dirty;
	int sparse;    /* let go of the bytes of units that cannot change */
	int marked;    /* the unit being read holds a record that may change */
	size_t cur;    /* hf_pass's place */
};

struct kg_reader;
struct kg_writer;

/* At a section's header (held records numbered from 0 again). */
void hf_reset(struct held_frames *f);
/* After a section's end record: what follows up to the next header goes. */
void hf_drop(struct held_frames *f);
/*
 * Before each record read (its pos; h the records held so far). With
 * f->sparse set, a unit that is not dirty and holds no record marked by
 * hf_mark goes out as it came for sure: the bytes of its records are
 * let go of (h's memory is then that of the units that may change).
 */
void hf_take(struct held_frames *f, struct kg_reader *r, uint64_t pos, struct held *h);
/* The record about to be held may be written anew (f->sparse). */
void hf_mark(struct held_frames *f);
/* A record not held (the current unit is dirty). */
void hf_skip(struct held_frames *f);
/* Held record i will be written anew (if sparse, one hf_mark saw). */
void hf_changed(struct held_frames *f, size_t i);
/*
 * Writing held record *i: when a clean unit starts there, write its
 * frames, count its records, set *i past them and return 1; else 0; -1
 * on a write error. Call with ascending *i from 0.
 */
int hf_pass(struct held_frames *f, struct kg_writer *w, const struct held *h, size_t *i);
void hf_release(struct held_frames *f);

#endif
