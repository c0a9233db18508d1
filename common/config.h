/*
 * config: the configuration a graph carries, as far as it tells it:
 * its ranks, the data- and tensor-parallel degrees from the process
 * groups of its collectives (pgroup.h tells them apart), the pipeline
 * depth, layers and micro-batches from its tasks' tags, the GPU its
 * header names, and whether a what-if tool edited it (its header's tools).
 * For graphstat's what-if report and graph2chrome's metadata.
 *
 * A what-if tool records in its tools entry what it set
 * ("graph-scale-dp 0.1 set: dp=128, world=1024 ..."; formats/graph-stream.md):
 * a degree or size set there wins over what the tasks tell, since a tool
 * that re-times collectives for a new degree keeps their groups' ranks.
 *
 * With `groups` set, holds a copy of each collective's task record until
 * config_finish; without, the degrees stay unknown.
 */
#ifndef KG_CONFIG_H
#define KG_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "kg.h"

struct config {
	int edited;            /* a graph-scale tool is among the header's tools */
	int groups;            /* keep the collectives for the degrees (set by the caller) */
	int64_t nranks, world; /* world: -1 when the header does not say */
	int64_t dp, tp;        /* after config_finish: -1 / 1 when not told */
	int64_t pp, layers, mbs; /* largest tag plus one; 0 when no task has one */
	int64_t hidden;        /* set by a what-if tool; -1 when not */
	int64_t set_dp, set_tp, set_pp, set_layers, set_mbs; /* as set by the tools; -1 when not */
	char gpu[128];         /* the header's GPU (1.5), "" when not told */
	int64_t gpu_mem, gpu_sms; /* -1 when not told */
	struct kg_task *coll;  /* the collectives with group ranks, until finish */
	size_t nc, capc;
};

void config_init(struct config *c);
void config_release(struct config *c);
/* A section begins. */
void config_header(struct config *c, const struct kg_header *h);
/* Whether the tool named (as "name version") edits graphs for what-ifs. */
int config_is_edit(const char *tool);
/*
 * The value the last of h's tools entries to set key (" set: key=N")
 * gave it, or -1.
 */
int64_t config_set(const struct kg_header *h, const char *key);
/* The job's world size h's graph stands for: the one set last, else the
 * header's, else its ranks. */
int64_t config_world(const struct kg_header *h);
/*
 * The world after a what-if tool takes the degree `key` (dp, tp, pp) from
 * `traced` (what the graph's tasks tell, unless a tool set it since) to
 * `to`: config_world scaled; -1 when a degree is not positive.
 */
int64_t config_world_to(const struct kg_header *h, const char *key, int64_t traced, int64_t to);
/*
 * A what-if tool's set clause, " set: KEY=N, ..." for the n keys given
 * (a value below 0 is left out), into buf.
 */
void config_set_text(char *buf, size_t len, const char *const *keys, const int64_t *vals,
    size_t n);
void config_task(struct config *c, const struct kg_task *t);
/* At the section's end, its strings still in r: the degrees. */
void config_finish(struct config *c, const struct kg_reader *r);

#endif
