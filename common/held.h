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

#endif
