/*
 * commkern: which GPU kernels are communication, by name. The one table
 * of name patterns every tool classifies kernels with (kineto2graph when
 * it writes a task's kind, graphstat when it reads a stream an older
 * kineto2graph wrote), so a kernel is communication in every report and
 * model or in none.
 *
 * A name is taken as the trace writes it (demangled, "void " and the
 * template arguments and parameter list included); a rule matches a
 * prefix of the whole name, or the callable's last component (with the
 * component before it, its namespace, where the rule names one). Each
 * rule says where its names were seen: a trace (in ../shared or named in
 * an issue) or the source of the library that launches them.
 */
#ifndef KG_COMMKERN_H
#define KG_COMMKERN_H

#include <stddef.h>
#include <stdint.h>

struct commkern_rule {
	const char *family; /* "nccl", "rccl", "nccl-symk", "deepep", "nvls", "custom-ar" */
	const char *pattern; /* as the table writes it, for the man page and -v */
	const char *seen;    /* the trace or source the names come from */
};

/*
 * The collective type (a kg_coll, KG_COLL_NONE when the rule says
 * communication but not which) of kernel name, or -1 when no rule takes
 * it for communication. *rule, when not NULL, is set to the rule that
 * matched (NULL for -1).
 */
int commkern_classify(const char *name, const struct commkern_rule **rule);

/*
 * commkern_classify once a name: a tool sees a name's kernels by the
 * thousand, and the patterns were a few percent of its time. By the
 * name's string id (per section: reset with each one's strings).
 */
struct commkern_memo {
	int16_t *c;
	size_t n, cap;
};

int commkern_memo(struct commkern_memo *m, uint32_t id, const char *name);
void commkern_memo_reset(struct commkern_memo *m);
void commkern_memo_release(struct commkern_memo *m);

/* The table, for listing: n rules. */
const struct commkern_rule *commkern_rules(size_t *n);

#endif
