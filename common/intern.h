/*
 * intern: a table that gives each distinct byte string a dense id, in
 * order of first appearance. Kineto traces repeat the same kernel and op
 * names tens of thousands of times; interning keeps one copy of each and
 * lets the graph refer to names by a 32-bit id.
 *
 * The table owns copies of its strings. Lookup hashes with XXH3 and
 * probes linearly; the load factor stays under 1/2.
 */
#ifndef KG_INTERN_H
#define KG_INTERN_H

#include <stddef.h>
#include <stdint.h>

struct intern {
	char **str;      /* str[id], NUL-terminated, owned */
	uint32_t *len;   /* len[id] */
	uint64_t *hash;  /* hash[id] */
	size_t n, cap;
	uint32_t *slot;  /* open addressing: id + 1, 0 = empty */
	size_t nslot;    /* power of two */
};

void intern_init(struct intern *t);
void intern_release(struct intern *t);
/* The id of s[0..len), adding it if new. */
uint32_t intern_get(struct intern *t, const char *s, size_t len);
/* The id of s[0..len), or UINT32_MAX if absent. */
uint32_t intern_find(const struct intern *t, const char *s, size_t len);

#endif
