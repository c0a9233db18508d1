/*
 * whatif: the skeleton of a what-if tool's main() (graph-scale-dp,
 * -layers, -pp, -hidden, -tp, -batch, graph-retime), in the manner of git's
 * parse-options: the options they share are read here, and so is the
 * loop over their inputs, so that a tool keeps its own options and its
 * work on a section. Like cli, it prints and exits.
 *
 * The options every one takes: -o, --output FILE; -q, --quiet; -h,
 * --help (the usage line and the help text on stdout, exit 0);
 * --version. Those a tool asks for, by a pointer to where they go:
 * -v, --verbose; --gpus-per-node N (1 to 2^20, 8 unless given); --net
 * GBPS,US and --topology NAME|FILE (cli_links), whose gpus-per-node, if
 * any, stands where --gpus-per-node is not given; --model MODEL and
 * --from MODEL (struct whatif_om, loaded by whatif_run_models). A bad value, an
 * unknown option or a missing argument is a usage error (exit 2); a
 * topology file that does not read ends the program with 1. A tool that
 * grows a graph (.sizes) takes --max-memory BYTES (cli_size: K, M, G,
 * T), the most it may hold (whatif_fits).
 *
 * The long options are matched in this order (getopt_long names them so
 * when an abbreviation is ambiguous): --output, the tool's own (with
 * --model and --from after the first om_at of them), then
 * --gpus-per-node, --net, --topology, --max-memory, --quiet, --verbose,
 * --help,
 * --version.
 *
 * The inputs: each FILE operand in turn, none meaning stdin, into one
 * graph stream at -o FILE or stdout, made whole or not at all (gout_open
 * and gout_close: a failure leaves no file, and a pipe an unterminated
 * section); the first input that fails stops the rest. A copy of the
 * struct with another output or other operands runs those instead
 * (graph-retime --sensitivity).
 *
 * A tool's main(), in short:
 *
 *	struct opts o;
 *	struct whatif_tool w = {
 *		.own = own, .gpn = &o.gpn,
 *		.name = "graph-scale-x", .usage = usage, .help = help, .producer = PRODUCER,
 *	};
 *
 *	memset(&o, 0, sizeof(o));
 *	while ((c = whatif_getopt(&w, argc, argv)) != -1)
 *		... its own options, by c ...
 *	whatif_number(&w, &o.n, 1 << 20, "the new degree", "degree", "");
 *	return whatif_run_graphs(&w, scale, &o);
 */
#ifndef KG_WHATIF_H
#define KG_WHATIF_H

#include <getopt.h>
#include <stdint.h>

#include "cli.h"
#include "comm.h"
#include "graph.h"
#include "kg.h"
#include "opmodel.h"

#define WHATIF_MAXOPTS 32

/* The --help lines of --model and --from, for a tool's help text. */
#define WHATIF_OM_HELP \
    "      --model MODEL      re-time kernels by MODEL (opmodel fit): each kernel\n" \
    "                         times predicted(new shapes) / predicted(traced ones)\n" \
    "      --from MODEL       the model of the graph's own GPU: the traced shapes\n" \
    "                         predicted by it, the new ones by --model's\n"

/*
 * The op models a tool re-times by: --model MODEL (the GPU to predict)
 * and --from MODEL (the graph's own GPU's), as given (NULL: not), and
 * as whatif_run_models loads them.
 */
struct whatif_om {
	const char *model, *from;
	struct om_model to, src;
	int have_to, have_src;
};

struct whatif_tool {
	/* the tool's, set before the first whatif_getopt (a designated
	 * initializer: what it leaves out is zero) */
	const char *name;           /* the program's, for messages (cli_init) */
	const char *usage, *help;
	const char *producer;       /* the tools entry of its sections, and a failed pipe's */
	const struct option *own;   /* its own long options, a zero entry last; NULL: none */
	int *verbose;               /* -v, --verbose set it to 1; NULL: no such option */
	int64_t *gpn;               /* --gpus-per-node; NULL: no such option */
	struct comm_given *given;   /* --net, --topology; NULL: no such options */
	int sizes;                  /* --max-memory; 0: no such option */
	struct whatif_om *om;       /* --model, --from; NULL: no such options */
	int om_at;                  /* with om: how many of its own options come
	                             * before them (where its --help lists them) */
	/* whatif_getopt's */
	const char *output;         /* -o FILE; NULL: stdout */
	int argc;                   /* the operands left: whatif_getopt's after the */
	char **argv;                /* options, whatif_number's after N */
	int gpn_set;
	struct option lo[WHATIF_MAXOPTS];
	char shortopts[8];
};

/*
 * The next of the tool's own options (getopt_long's value, optarg its
 * argument), the shared ones done on the way; -1 at the end of the
 * options, with w->argc and w->argv the operands.
 */
int whatif_getopt(struct whatif_tool *w, int argc, char **argv);
/*
 * The first operand, N: a whole number from 1 to max into *n, the
 * operands after it left in w. Missing: `missing WHAT`; bad: `invalid
 * NAME 'ARG'HINT`; both exit 2 with the usage.
 */
void whatif_number(struct whatif_tool *w, int64_t *n, int64_t max, const char *what,
    const char *name, const char *hint);

/*
 * A size option's argument (graph-scale-hidden's --ffn, graph-scale-batch's
 * --seq and the like): a whole number from 1 to 2^30; bad: `invalid
 * WHAT 'ARG' (a positive integer)`, exit 2 with the usage.
 */
int64_t whatif_size(const struct whatif_tool *w, const char *what, const char *arg);

/* One input (path NULL: stdin) into out: 0, or 1 after a message. */
typedef int whatif_input_fn(void *arg, const char *path, struct gout *out);
/*
 * A section held whole (common/graph.h), the index-th of the input
 * `name`, rebuilt into out: 0, or 1 after a message.
 */
typedef int whatif_section_fn(void *arg, struct graph *g, const struct kg_reader *r,
    const char *name, int index, struct gout *out);

/* Every input through `input` into w's output; the exit status. */
int whatif_run(const struct whatif_tool *w, whatif_input_fn *input, void *arg);
/* Every section of every input through `section`, likewise. */
int whatif_run_graphs(const struct whatif_tool *w, whatif_section_fn *section, void *arg);

/*
 * The end of a section a tool rebuilt whole: g written to out, the
 * writer following g's header, with the tools entry `tool` and the
 * strings xstr[0..nxstr) added after the section's own (graph_write):
 * 0, or 1 after `tool: OUTPUT: reason`.
 */
int whatif_write(struct gout *out, struct graph *g, const char *tool, const char *const *xstr,
    size_t nxstr);

/*
 * whatif_run_graphs with the op models of w->om loaded before and
 * released after: --from without --model is a usage error (`--from
 * needs --model (the GPU to predict)`, exit 2); a model that does not
 * load, 1 after whatif_models' message. In whatif-om.c.
 */
int whatif_run_models(const struct whatif_tool *w, whatif_section_fn *section, void *arg);

/*
 * A section resized by its operators' dims (graph-scale-hidden, -batch:
 * common/resize.h), z collected from it: the tool's part, 0 with the
 * tools entry begun in set (`PRODUCER set: ... (from ...`) and *tp the
 * tensor-parallel degree its shapes are sharded by, or 1 after a
 * message.
 */
struct rz_section;
typedef int whatif_resize_fn(void *arg, struct graph *g, const struct kg_reader *r,
    const char *name, int index, struct rz_section *z, char *set, size_t setlen, int64_t *tp);
/*
 * whatif_run_models with every section through `resize`, then its end:
 * the warning that z's collectives were re-timed by the built-in
 * topology of the GPU the header names (comm_topology_default), where
 * any were; the tools entry closed (`, tensor-parallel shares` where
 * *tp > 1, then `, op model` or `, by FLOPs and bytes`, and `)`); the
 * section written (whatif_write) with z's strings. In whatif-om.c.
 */
int whatif_run_resized(const struct whatif_tool *w, whatif_resize_fn *resize, void *arg);

/*
 * --model MODEL and --from MODEL (NULL: not given) loaded into to and
 * src, *have_to and *have_src saying which were; 0, or 1 after `tool:
 * FILE: reason`, neither then left loaded. In whatif-om.c, which links
 * the op model (libxgboost): only the tools that take a model link it.
 */
/*
 * Sizes. A tool that grows a graph estimates what it will hold, from
 * its input section and its arguments, before it allocates the new
 * graph, and asks whatif_fits; out of memory (util.h's oom) on a valid
 * argument is then a defect. The limit is --max-memory, else the
 * machine's physical memory or the process's address-space or data
 * limit (getrlimit), whichever is less, less an eighth.
 */
uint64_t whatif_limit(void);
/* What grow() (util.h) holds for n elements of `size` bytes. */
uint64_t whatif_vec(uint64_t n, size_t size);
/* What a section held whole (common/graph.h) holds: its arrays' capacities. */
uint64_t whatif_graph_bytes(const struct graph *g);
/*
 * 0 when `bytes` is within the limit; else 1 after `tool: NAME: section
 * INDEX: WHAT would hold N tasks and M edges (about B); the limit is L
 * (--max-memory...)`, WHAT the arguments that grow it ("1000000 layers").
 */
int whatif_fits(const char *name, int index, const char *what, uint64_t ntask, uint64_t nedge,
    uint64_t bytes);

struct om_model;
int whatif_models(const char *model, const char *from, struct om_model *to, struct om_model *src,
    int *have_to, int *have_src);

#endif
