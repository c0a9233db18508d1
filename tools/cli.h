/*
 * cli: the program side every tool shares (messages, exit codes, opening
 * inputs and outputs). Unlike libcommon, this code prints and exits; it
 * is what turns a library error into `tool: FILE: reason` and a status.
 *
 * Exit statuses: 0 ok, 1 bad data or I/O, 2 bad usage.
 */
#ifndef KG_CLI_H
#define KG_CLI_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "comm.h"
#include "kg.h"

#define KG_VERSION "0.1"

/* What the what-if tools say when a graph has no layer tags. */
#define NO_LAYERS "kineto2graph found no repeated block in the forward pass; name the " \
	"layers with record_function ranges (\"layer_3\"), record nn.Module calls " \
	"(with_stack=True) or give kineto2graph --layer-ops REGEX"

extern const char *progname;
extern int quiet; /* -q: no warnings */

void cli_init(const char *name);
/* `tool: message` on stderr. */
void errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void warnmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The usage line and a hint, then exit 2. */
void usage_exit(const char *usage) __attribute__((noreturn));
void version_exit(void) __attribute__((noreturn));

/*
 * A size in bytes: a whole number with an optional K, M, G or T (powers
 * of 1024, either case), from 1 to 2^60, into *out. 0, or -1 (*out
 * untouched).
 */
int cli_size(const char *s, uint64_t *out);
/* n bytes for a message: "512 bytes", "3.5 MiB", "190.0 GiB". */
void cli_bytes_text(char *buf, size_t len, uint64_t n);

/* Open an input operand ("-" = stdin); NULL after printing the message. */
FILE *open_input(const char *path);
const char *input_name(const char *path);
/*
 * Another kgraph program by name (graphsim, kineto2graph): the path of
 * the one beside this program's executable when there is one, else the
 * name alone, for a search of PATH. The caller frees it.
 */
char *cli_sibling(const char *name);

/*
 * Binary output: stdout (refused when a terminal) or path. A file is
 * written under a temporary name and renamed into place by out_commit, so
 * a failed run leaves nothing half written; out_abort removes it, and so
 * does SIGINT, SIGTERM, SIGHUP, SIGQUIT or SIGABRT (the out-of-memory
 * guard's) before the commit (the first out_open installs the handlers;
 * the signal then ends the program as it would).
 */
struct out {
	FILE *fp;
	const char *path; /* NULL: stdout */
	char *tmp;
};
/*
 * fork(2) for a worker: the child does not remove the parent's temporary
 * files nor end its workers, and takes the signals' default actions; the
 * parent ends the child (SIGKILL) if a signal ends the parent before
 * cli_reaped(pid) says the child is gone.
 */
pid_t cli_fork(void);
void cli_reaped(pid_t pid);

int out_open(struct out *o, const char *path, int binary);
/*
 * mkdtemp(dir) for a tool's scratch files: the directory and the files
 * named (full paths under it, which the tool may make or not) are
 * removed by a signal that ends the program, as out_open's are, and by
 * cli_tmpdir_remove. 0, or -1 with errno (no free slot: EMFILE).
 */
int cli_tmpdir(char *dir, char **files, size_t nfiles);
void cli_tmpdir_remove(char *dir, char **files, size_t nfiles);
int out_commit(struct out *o);
void out_abort(struct out *o);
/*
 * A graph stream to write: the output and its writer. gout_close finishes
 * it and returns the exit status: with rc 0 it commits; otherwise a file
 * is removed, and a pipe is left with an unterminated section (a header
 * from `producer` and no end), so that no reader takes what already went
 * down it as whole.
 */
struct gout {
	struct out out;
	struct kg_writer w;
	const char *name; /* for messages: the file, or "stdout" */
};
int gout_open(struct gout *g, const char *path, int level);
int gout_close(struct gout *g, int rc, const char *producer);

/*
 * A graph stream to read: the operand ("-" or NULL for stdin), its reader
 * and the record last read. gin_read returns kg_read's type, or -1 after
 * printing `tool: FILE: reason`.
 */
struct gin {
	FILE *fp;
	struct kg_reader r;
	struct kg_rec rec;
	const char *name;
};
int gin_open(struct gin *g, const char *path);
int gin_read(struct gin *g);
void gin_close(struct gin *g);

/*
 * The what-if tools' links: --net GBPS,US (link 1, the network) or
 * --topology NAME|FILE (link -1: a built-in topology, comm.h, filling
 * the links not given already, else a file) into g. A bad --net is a usage error
 * (exit 2); a bad file returns 1 after `tool: FILE: reason`; else 0.
 */
int cli_links(int link, const char *arg, struct comm_given *g, const char *usage);

/*
 * s[0..len) as a JSON string, quoted and escaped, on f; bytes that are
 * not valid UTF-8 become U+FFFD.
 */
void json_str(FILE *f, const char *s, size_t len);

/* Close stdout checking for write errors (text tools); 0 or 1. */
int close_stdout(void);

#endif
