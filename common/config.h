/*
 * config: the configuration a graph carries, as far as it tells it:
 * its ranks, the data- and tensor-parallel degrees from the process
 * groups of its collectives (pgroup.h tells them apart), the pipeline
 * depth, layers and micro-batches from its tasks' tags, the GPU its
 * header names, and whether a what-if tool edited it (its header's tools). For graphstat's what-if
 * report and graph2chrome's metadata.
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
void config_task(struct config *c, const struct kg_task *t);
/* At the section's end, its strings still in r: the degrees. */
void config_finish(struct config *c, const struct kg_reader *r);

#endif
