/*
 * tracegen: synthetic Kineto traces of a Megatron-style GPT training job,
 * one gzip-compressed JSON file per rank.
 *
 * The whole job is recorded and simulated (tools/tracegen/), then the
 * ranks asked for are written, in parallel by forked workers. Every file
 * is written under a temporary name and renamed once all are written, so
 * a failed run leaves no trace file behind.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "cli.h"
#include "tg.h"
#include "util.h"

static const char usage[] =
    "tracegen [-v] [--preset NAME] [--layers N] [--hidden N] [--ffn N] [--heads N] "
    "[--seq N] [--vocab N] [--mbs N] [--microbatches N] [--tp N] [--pp N] [--dp N] "
    "[--sequence-parallel] [--schedule 1f1b|gpipe] [--gpus-per-node N] [--hw NAME|FILE] [--iterations N] "
    "[--seed N] [--ranks LIST] [--no-sync-records] [--no-annotations] [--clock-skew US] "
    "[--profile-memory] [--recompute full|selective] [--jobs N] -d DIR";

static const char help[] =
    "Write synthetic PyTorch profiler (Kineto) traces of a Megatron-style GPT\n"
    "training job: DIR/rank-R.json.gz for every rank.\n"
    "\n"
    "  -d, --dir DIR            write the traces into DIR (made if missing)\n"
    "      --preset NAME        tiny, small (the default) or gpt15b\n"
    "      --layers N           transformer layers\n"
    "      --hidden N           hidden size\n"
    "      --ffn N              MLP hidden size\n"
    "      --heads N            attention heads\n"
    "      --seq N              sequence length\n"
    "      --vocab N            vocabulary size\n"
    "      --mbs N              micro-batch size\n"
    "      --microbatches N     micro-batches per iteration\n"
    "      --tp N, --pp N, --dp N   tensor-, pipeline- and data-parallel degrees\n"
    "      --sequence-parallel      Megatron's sequence parallelism (with --tp)\n"
    "      --schedule 1f1b|gpipe    pipeline schedule\n"
    "      --gpus-per-node N    GPUs per node\n"
    "      --hw NAME|FILE       hardware profile: h100, h200, a100, or a file\n"
    "      --iterations N       ProfilerSteps to write\n"
    "      --seed N             noise seed\n"
    "      --ranks LIST         write only these ranks (0,2,4-7)\n"
    "      --no-sync-records    no cuda_sync records\n"
    "      --no-annotations     no micro-batch and layer annotations\n"
    "      --clock-skew US      each rank's clock off by up to US microseconds\n"
    "      --profile-memory     the allocator's [memory] events, by tracegen(1)'s model\n"
    "      --recompute full|selective  each layer's forward, or its attention core,\n"
    "                           run again in its backward (activation recomputation)\n"
    "      --jobs N             write with N processes (default: the CPUs)\n"
    "  -v, --verbose            print what was written on stderr\n"
    "  -h, --help               this help\n"
    "      --version            the version\n"
    "\n"
    "Options override the preset. See tracegen(1).\n";

#define MAX_WORLD 16384
#define MAX_OPS INT64_C(300000000)

/* Options that set a value, in the order of struct field offsets below. */
enum {
	O_LAYERS, O_HIDDEN, O_FFN, O_HEADS, O_SEQ, O_VOCAB, O_MBS, O_MICRO, O_TP, O_PP, O_DP,
	O_GPN, O_ITER, NNUM
};

static const struct {
	const char *name;
	int64_t min, max;
	size_t off;
} numopt[NNUM] = {
	{ "layers", 1, 4096, offsetof(struct tg_cfg, layers) },
	{ "hidden", 1, 1 << 20, offsetof(struct tg_cfg, hidden) },
	{ "ffn", 1, 1 << 22, offsetof(struct tg_cfg, ffn) },
	{ "heads", 1, 65536, offsetof(struct tg_cfg, heads) },
	{ "seq", 1, 1 << 20, offsetof(struct tg_cfg, seq) },
	{ "vocab", 1, 1 << 24, offsetof(struct tg_cfg, vocab) },
	{ "mbs", 1, 1024, offsetof(struct tg_cfg, mbs) },
	{ "microbatches", 1, 65536, offsetof(struct tg_cfg, microbatches) },
	{ "tp", 1, MAX_WORLD, offsetof(struct tg_cfg, tp) },
	{ "pp", 1, MAX_WORLD, offsetof(struct tg_cfg, pp) },
	{ "dp", 1, MAX_WORLD, offsetof(struct tg_cfg, dp) },
	{ "gpus-per-node", 1, 1024, offsetof(struct tg_cfg, gpus_per_node) },
	{ "iterations", 1, 1000, offsetof(struct tg_cfg, iterations) },
};

/* layers hidden ffn heads seq vocab mbs microbatches tp pp dp gpn iterations */
static const struct preset {
	const char *name;
	int64_t v[NNUM];
	const char *hw;
} presets[] = {
	{ "tiny", { 4, 256, 1024, 4, 128, 1024, 1, 4, 2, 2, 2, 4, 2 }, "h100" },
	{ "small", { 24, 1024, 4096, 16, 2048, 51200, 2, 8, 2, 2, 2, 8, 2 }, "h100" },
	{ "gpt15b", { 48, 5120, 20480, 40, 2048, 51200, 1, 8, 8, 2, 1, 8, 2 }, "h100" },
};

struct opts {
	struct tg_cfg c;
	const char *dir;
	const char *preset;
	const char *hw;
	const char *ranks;
	int set[NNUM];
	int64_t val[NNUM];
	int schedule_set;
	int jobs;
	int verbose;
};

static int64_t *
cfg_field(struct tg_cfg *c, int i)
{
	return (int64_t *)((char *)c + numopt[i].off);
}

static int
parse_seed(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	const char *p;

	if (*s == '\0')
		return -1;
	for (p = s; *p != '\0'; p++) {
		if (*p < '0' || *p > '9' || v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*out = v;
	return 0;
}

/* "0,3,5-7" into a bitmap of world entries; -1 bad syntax, -2 out of range (*bad). */
static int
parse_ranks(const char *s, int world, unsigned char *sel, int64_t *bad)
{
	const char *p = s;

	if (*p == '\0')
		return -1;
	while (*p != '\0') {
		int64_t a = 0, b;
		int n = 0;

		while (*p >= '0' && *p <= '9' && n < 10)
			a = a * 10 + (*p++ - '0'), n++;
		if (n == 0 || (*p >= '0' && *p <= '9'))
			return -1;
		b = a;
		if (*p == '-') {
			p++;
			b = 0, n = 0;
			while (*p >= '0' && *p <= '9' && n < 10)
				b = b * 10 + (*p++ - '0'), n++;
			if (n == 0 || b < a || (*p >= '0' && *p <= '9'))
				return -1;
		}
		if (*p == ',' && p[1] != '\0')
			p++;
		else if (*p != '\0')
			return -1;
		if (b >= world) {
			*bad = a >= world ? a : world;
			return -2;
		}
		for (; a <= b; a++)
			sel[a] = 1;
	}
	return 0;
}

static int
check(const struct tg_cfg *c)
{
#define DIV(a, an, b, bn)                                                          \
	if ((a) % (b) != 0) {                                                      \
		errmsg("--%s %lld is not divisible by --%s %lld", an, (long long)(a), \
		    bn, (long long)(b));                                           \
		return -1;                                                         \
	}
	int64_t world = c->tp * c->pp * c->dp, ops;

	DIV(c->hidden, "hidden", c->heads, "heads");
	DIV(c->heads, "heads", c->tp, "tp");
	DIV(c->ffn, "ffn", c->tp, "tp");
	DIV(c->vocab, "vocab", c->tp, "tp");
	if (c->sp && c->seq % c->tp != 0) {
		errmsg("--seq %lld is not divisible by --tp %lld (--sequence-parallel)",
		    (long long)c->seq, (long long)c->tp);
		return -1;
	}
	DIV(c->layers, "layers", c->pp, "pp");
#undef DIV
	if (world > MAX_WORLD) {
		errmsg("--tp %lld --pp %lld --dp %lld make %lld ranks, more than %d",
		    (long long)c->tp, (long long)c->pp, (long long)c->dp, (long long)world,
		    MAX_WORLD);
		return -1;
	}
	/* About 50 GPU ops a layer and micro-batch, forward and backward. */
	ops = world * (c->layers / c->pp + 2) * c->microbatches * c->iterations * 50;
	if (ops > MAX_OPS) {
		errmsg("a job of about %lld GPU ops is too large (at most %lld)",
		    (long long)ops, (long long)MAX_OPS);
		return -1;
	}
	return 0;
}

static char *
path_of(const char *dir, int r, const char *suffix)
{
	size_t n = strlen(dir) + 64;
	char *p = xmalloc(n);

	snprintf(p, n, "%s/%srank-%d.json.gz%s", dir, *suffix ? "." : "", r, suffix);
	return p;
}

/* Write the ranks r with r % nj == w, under their temporary names. */
static int
worker(struct tg_job *J, const char *dir, const int *ranks, int nr, int w, int nj,
    const char *suffix, uint64_t *json)
{
	int i;

	for (i = w; i < nr; i += nj) {
		char *tmp = path_of(dir, ranks[i], suffix), *fin = path_of(dir, ranks[i], "");
		struct jw jw;
		int fd, err;

		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
		if (fd < 0) {
			errmsg("%s: %s", fin, strerror(errno));
			free(tmp), free(fin);
			return 1;
		}
		if (jw_open(&jw, fd) < 0) {
			errmsg("%s: cannot start zlib", fin);
			close(fd);
			free(tmp), free(fin);
			return 1;
		}
		job_emit(J, ranks[i], &jw);
		*json += jw.raw + jw.n;
		err = jw_close(&jw);
		if (close(fd) != 0 && err == 0)
			err = errno;
		if (err != 0) {
			errmsg("%s: write error: %s", fin, strerror(err));
			free(tmp), free(fin);
			return 1;
		}
		free(tmp), free(fin);
	}
	return 0;
}

static void
unlink_all(const char *dir, const int *ranks, int nr, const char *suffix)
{
	int i;

	for (i = 0; i < nr; i++) {
		char *p = path_of(dir, ranks[i], suffix);

		unlink(p);
		free(p);
	}
}

/*
 * A signal that ends tracegen (SIGINT, SIGTERM, SIGHUP, SIGQUIT, and
 * SIGABRT, the out-of-memory guard's) while it writes
 * removes what it wrote, as a failure does: every rank's temporary file,
 * the final files renamed so far, and the directory if tracegen made it
 * (when empty). The paths are made before the first file is, so that the
 * handler only calls unlink, rmdir and raise. The workers inherit it and
 * remove the same files (a file already gone is no error).
 */
static const int sig_list[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT };
static char **sig_tmp, **sig_fin;
static int sig_n;
static volatile sig_atomic_t sig_renamed, sig_npids;
static const char *sig_dir;
static pid_t *sig_pids;    /* the workers, in the parent: they go too */

static void
on_signal(int sig)
{
	int i;

	for (i = 0; i < sig_npids; i++)
		kill(sig_pids[i], sig);

	for (i = 0; i < sig_n; i++)
		unlink(sig_tmp[i]);
	for (i = 0; i < sig_renamed && i < sig_n; i++)
		unlink(sig_fin[i]);
	if (sig_dir != NULL)
		rmdir(sig_dir);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void
sig_arm(const char *dir, const int *ranks, int nr, const char *suffix, int made)
{
	size_t i;

	sig_tmp = xmalloc((size_t)(nr + 1) * sizeof(*sig_tmp));
	sig_fin = xmalloc((size_t)(nr + 1) * sizeof(*sig_fin));
	for (i = 0; i < (size_t)nr; i++) {
		sig_tmp[i] = path_of(dir, ranks[i], suffix);
		sig_fin[i] = path_of(dir, ranks[i], "");
	}
	sig_renamed = 0;
	sig_dir = made ? dir : NULL;
	sig_n = nr;
	for (i = 0; i < sizeof(sig_list) / sizeof(sig_list[0]); i++) {
		struct sigaction sa, prev;

		if (sigaction(sig_list[i], NULL, &prev) == 0 && prev.sa_handler == SIG_IGN)
			continue; /* started ignoring it: it stays so */
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(sig_list[i], &sa, NULL);
	}
}

static void
sig_disarm(void)
{
	size_t i;
	int n = sig_n;

	for (i = 0; i < sizeof(sig_list) / sizeof(sig_list[0]); i++) {
		struct sigaction prev;

		if (sigaction(sig_list[i], NULL, &prev) == 0 && prev.sa_handler == on_signal)
			signal(sig_list[i], SIG_DFL);
	}
	sig_n = 0;
	for (i = 0; i < (size_t)n; i++)
		free(sig_tmp[i]), free(sig_fin[i]);
	free(sig_tmp), free(sig_fin);
	sig_tmp = sig_fin = NULL;
}

static int
write_all(struct tg_job *J, const struct opts *o, const int *ranks, int nr)
{
	char suffix[48];
	int nj = o->jobs < nr ? o->jobs : nr, i, rc = 0, made = 0;
	uint64_t json = 0;
	struct stat st;
	pid_t *pids;
	int (*pipes)[2];

	if (stat(o->dir, &st) != 0) {
		if (errno != ENOENT || mkdir(o->dir, 0777) != 0) {
			errmsg("%s: %s", o->dir, strerror(errno));
			return 1;
		}
		made = 1;
	} else if (!S_ISDIR(st.st_mode)) {
		errmsg("%s: %s", o->dir, strerror(ENOTDIR));
		return 1;
	}
	snprintf(suffix, sizeof(suffix), ".tmp%ld", (long)getpid());
	sig_arm(o->dir, ranks, nr, suffix, made);
	fflush(NULL);
	if (nj <= 1) {
		rc = worker(J, o->dir, ranks, nr, 0, 1, suffix, &json);
	} else {
		sigset_t block, old;

		pids = xcalloc((size_t)nj, sizeof(*pids));
		pipes = xcalloc((size_t)nj, sizeof(*pipes));
		/*
		 * The signals wait while a worker is started, until the parent
		 * has it in sig_pids: one that came between fork and that
		 * would leave the new worker writing on after the parent's
		 * end.
		 */
		sigemptyset(&block);
		for (i = 0; i < (int)(sizeof(sig_list) / sizeof(sig_list[0])); i++)
			sigaddset(&block, sig_list[i]);
		for (i = 0; i < nj; i++) {
			sigprocmask(SIG_BLOCK, &block, &old);
			if (pipe(pipes[i]) != 0 || (pids[i] = fork()) < 0) {
				errmsg("cannot start a worker: %s", strerror(errno));
				sigprocmask(SIG_SETMASK, &old, NULL);
				rc = 1;
				nj = i;
				break;
			}
			if (pids[i] == 0) {
				uint64_t n = 0;
				int r;

				sig_npids = 0;
				sigprocmask(SIG_SETMASK, &old, NULL);
				close(pipes[i][0]);
				r = worker(J, o->dir, ranks, nr, i, nj, suffix, &n);
				if (write(pipes[i][1], &n, sizeof(n)) != (ssize_t)sizeof(n))
					r = 1;
				_exit(r);
			}
			close(pipes[i][1]);
			sig_pids = pids;
			sig_npids = i + 1;
			sigprocmask(SIG_SETMASK, &old, NULL);
		}
		for (i = 0; i < nj; i++) {
			uint64_t n = 0;
			int status;

			if (read(pipes[i][0], &n, sizeof(n)) == (ssize_t)sizeof(n))
				json += n;
			close(pipes[i][0]);
			while (waitpid(pids[i], &status, 0) < 0 && errno == EINTR)
				;
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
				if (WIFSIGNALED(status))
					errmsg("a worker ended by signal %d", WTERMSIG(status));
				rc = 1;
			}
		}
		sig_npids = 0;
		free(pids);
		free(pipes);
	}
	for (i = 0; i < nr && rc == 0; i++) {
		char *tmp = path_of(o->dir, ranks[i], suffix), *fin = path_of(o->dir, ranks[i], "");

		if (rename(tmp, fin) != 0) {
			errmsg("%s: %s", fin, strerror(errno));
			rc = 1;
			/* The files renamed so far go too: all or none. */
			unlink_all(o->dir, ranks, i, "");
		} else {
			sig_renamed = i + 1;
		}
		free(tmp), free(fin);
	}
	if (rc != 0) {
		unlink_all(o->dir, ranks, nr, suffix);
		if (made)
			rmdir(o->dir);
		sig_disarm();
		return 1;
	}
	sig_disarm();
	if (o->verbose)
		fprintf(stderr, "%s: %s: %d of %d ranks, %llu bytes of JSON\n", progname, o->dir,
		    nr, J->world, (unsigned long long)json);
	return 0;
}

/* sel: the ranks to write, world entries. */
static int
run(struct opts *o, const unsigned char *sel)
{
	struct tg_job J;
	int *ranks, nr = 0, r, rc;
	char err[256];

	if (job_init(&J, &o->c, err, sizeof(err)) < 0) {
		errmsg("%s", err);
		job_release(&J);
		return 1;
	}
	ranks = xmalloc((size_t)J.world * sizeof(int));
	for (r = 0; r < J.world; r++)
		if (sel[r])
			ranks[nr++] = r;
	job_record(&J);
	if (job_sim(&J, err, sizeof(err)) < 0) {
		errmsg("%s", err);
		rc = 1;
	} else {
		rc = write_all(&J, o, ranks, nr);
	}
	free(ranks);
	job_release(&J);
	return rc;
}

int
main(int argc, char **argv)
{
	enum { L_PRESET = 256, L_SP, L_SCHED, L_HW, L_SEED, L_RANKS, L_NOSYNC, L_NOANN, L_JOBS, L_SKEW, L_MEM, L_RECOMP,
		L_VERSION, L_NUM };
	static const struct option longopts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "preset", required_argument, NULL, L_PRESET },
		{ "layers", required_argument, NULL, L_NUM + O_LAYERS },
		{ "hidden", required_argument, NULL, L_NUM + O_HIDDEN },
		{ "ffn", required_argument, NULL, L_NUM + O_FFN },
		{ "heads", required_argument, NULL, L_NUM + O_HEADS },
		{ "seq", required_argument, NULL, L_NUM + O_SEQ },
		{ "vocab", required_argument, NULL, L_NUM + O_VOCAB },
		{ "mbs", required_argument, NULL, L_NUM + O_MBS },
		{ "microbatches", required_argument, NULL, L_NUM + O_MICRO },
		{ "tp", required_argument, NULL, L_NUM + O_TP },
		{ "pp", required_argument, NULL, L_NUM + O_PP },
		{ "dp", required_argument, NULL, L_NUM + O_DP },
		{ "gpus-per-node", required_argument, NULL, L_NUM + O_GPN },
		{ "iterations", required_argument, NULL, L_NUM + O_ITER },
		{ "schedule", required_argument, NULL, L_SCHED },
		{ "sequence-parallel", no_argument, NULL, L_SP },
		{ "hw", required_argument, NULL, L_HW },
		{ "seed", required_argument, NULL, L_SEED },
		{ "ranks", required_argument, NULL, L_RANKS },
		{ "no-sync-records", no_argument, NULL, L_NOSYNC },
		{ "no-annotations", no_argument, NULL, L_NOANN },
		{ "profile-memory", no_argument, NULL, L_MEM },
		{ "recompute", required_argument, NULL, L_RECOMP },
		{ "clock-skew", required_argument, NULL, L_SKEW },
		{ "jobs", required_argument, NULL, L_JOBS },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, L_VERSION },
		{ NULL, 0, NULL, 0 }
	};
	const struct preset *ps = &presets[1];
	struct opts o;
	unsigned char *sel;
	int c, i, world;
	int64_t v;
	long ncpu;

	cli_init("tracegen");
	memset(&o, 0, sizeof(o));
	o.c.sync_records = 1;
	o.c.annotations = 1;
	o.c.seed = 1;
	o.c.schedule = SCHED_1F1B;
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	o.jobs = ncpu < 1 ? 1 : ncpu > 64 ? 64 : (int)ncpu;
	while ((c = getopt_long(argc, argv, "d:vh", longopts, NULL)) != -1) {
		if (c >= L_NUM && c < L_NUM + NNUM) {
			i = c - L_NUM;
			if (parse_i64(optarg, numopt[i].min, numopt[i].max, &v) < 0) {
				errmsg("invalid --%s '%s' (%lld to %lld)", numopt[i].name, optarg,
				    (long long)numopt[i].min, (long long)numopt[i].max);
				usage_exit(usage);
			}
			o.set[i] = 1;
			o.val[i] = v;
			continue;
		}
		switch (c) {
		case 'd':
			o.dir = optarg;
			break;
		case L_PRESET:
			for (i = 0; i < (int)(sizeof(presets) / sizeof(presets[0])); i++)
				if (strcmp(presets[i].name, optarg) == 0)
					break;
			if (i == (int)(sizeof(presets) / sizeof(presets[0]))) {
				errmsg("unknown preset '%s' (tiny, small, gpt15b)", optarg);
				usage_exit(usage);
			}
			ps = &presets[i];
			o.preset = optarg;
			break;
		case L_SP:
			o.c.sp = 1;
			break;
		case L_SCHED:
			if (strcmp(optarg, "1f1b") == 0) {
				o.c.schedule = SCHED_1F1B;
			} else if (strcmp(optarg, "gpipe") == 0) {
				o.c.schedule = SCHED_GPIPE;
			} else {
				errmsg("invalid --schedule '%s' (1f1b or gpipe)", optarg);
				usage_exit(usage);
			}
			o.schedule_set = 1;
			break;
		case L_HW:
			o.hw = optarg;
			break;
		case L_SEED:
			if (parse_seed(optarg, &o.c.seed) < 0) {
				errmsg("invalid --seed '%s' (0 to 18446744073709551615)", optarg);
				usage_exit(usage);
			}
			break;
		case L_RANKS:
			{
				unsigned char *all = xcalloc(MAX_WORLD, 1);
				int64_t bad;

				/* Syntax now; the range once the job's size is known. */
				if (parse_ranks(optarg, MAX_WORLD, all, &bad) != 0) {
					free(all);
					errmsg("invalid --ranks '%s' (ranks and ranges: 0,2,4-7)",
					    optarg);
					usage_exit(usage);
				}
				free(all);
			}
			o.ranks = optarg;
			break;
		case L_NOSYNC:
			o.c.sync_records = 0;
			break;
		case L_MEM:
			o.c.memory = 1;
			break;
		case L_RECOMP:
			if (strcmp(optarg, "full") == 0) {
				o.c.recompute = RC_FULL;
			} else if (strcmp(optarg, "selective") == 0) {
				o.c.recompute = RC_SELECTIVE;
			} else {
				errmsg("invalid --recompute '%s' (full or selective)", optarg);
				usage_exit(usage);
			}
			break;
		case L_NOANN:
			o.c.annotations = 0;
			break;
		case L_SKEW:
			if (parse_i64(optarg, 0, 1000000000, &v) < 0) {
				errmsg("invalid --clock-skew '%s' (0 to 1000000000 us)", optarg);
				usage_exit(usage);
			}
			o.c.clock_skew = v * 1000;
			break;
		case L_JOBS:
			if (parse_i64(optarg, 1, 64, &v) < 0) {
				errmsg("invalid --jobs '%s' (1 to 64)", optarg);
				usage_exit(usage);
			}
			o.jobs = (int)v;
			break;
		case 'v':
			o.verbose = 1;
			break;
		case 'h':
			printf("usage: %s\n\n%s", usage, help);
			return close_stdout();
		case L_VERSION:
			version_exit();
		default:
			usage_exit(usage);
		}
	}
	if (optind < argc) {
		errmsg("unexpected operand '%s'", argv[optind]);
		usage_exit(usage);
	}
	if (o.dir == NULL) {
		errmsg("no output directory (-d DIR)");
		usage_exit(usage);
	}
	for (i = 0; i < NNUM; i++)
		*cfg_field(&o.c, i) = o.set[i] ? o.val[i] : ps->v[i];
	if (!o.set[O_FFN] && o.set[O_HIDDEN])
		o.c.ffn = 4 * o.c.hidden;
	if (o.hw == NULL) {
		hw_builtin(ps->hw, &o.c.hw);
	} else if (hw_builtin(o.hw, &o.c.hw) < 0) {
		char err[256];

		if (access(o.hw, F_OK) != 0) {
			errmsg("unknown hardware profile '%s' (%s, or a file)", o.hw, hw_names);
			usage_exit(usage);
		}
		if (hw_load(o.hw, &o.c.hw, err, sizeof(err)) < 0) {
			errmsg("%s: %s", o.hw, err);
			return 1;
		}
	}
	if (check(&o.c) < 0)
		usage_exit(usage);
	world = (int)(o.c.tp * o.c.pp * o.c.dp);
	sel = xcalloc((size_t)world, 1);
	if (o.ranks == NULL) {
		memset(sel, 1, (size_t)world);
	} else if (parse_ranks(o.ranks, world, sel, &v) < 0) {
		errmsg("--ranks: rank %lld is not in a job of %d ranks", (long long)v, world);
		free(sel);
		usage_exit(usage);
	}
	signal(SIGPIPE, SIG_DFL);
	c = run(&o, sel);
	free(sel);
	return c;
}
