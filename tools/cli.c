#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

const char *progname = "kgraph";
int quiet;

void
cli_init(const char *name)
{
	progname = name;
}

void
errmsg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void
warnmsg(const char *fmt, ...)
{
	va_list ap;

	if (quiet)
		return;
	fprintf(stderr, "%s: warning: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void
usage_exit(const char *usage)
{
	fprintf(stderr, "usage: %s\nTry '%s --help' for more information.\n",
	    usage, progname);
	exit(2);
}

void
version_exit(void)
{
	printf("%s (kgraph) %s\n", progname, KG_VERSION);
	exit(close_stdout());
}

const char *
input_name(const char *path)
{
	return path == NULL || strcmp(path, "-") == 0 ? "-" : path;
}

char *
cli_sibling(const char *name)
{
	char self[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash != NULL) {
			size_t dl = (size_t)(slash - self) + 1;
			char *p = xmalloc(dl + strlen(name) + 1);

			memcpy(p, self, dl);
			strcpy(p + dl, name);
			if (access(p, X_OK) == 0)
				return p;
			free(p);
		}
	}
	return xstrndup(name, strlen(name));
}

FILE *
open_input(const char *path)
{
	FILE *fp;

	if (path == NULL || strcmp(path, "-") == 0)
		return stdin;
	fp = fopen(path, "rb");
	if (fp == NULL)
		errmsg("%s: %s", path, strerror(errno));
	return fp;
}

/*
 * The temporary files out_open made and not yet committed or removed,
 * and the directories a tool made for its own (cli_tmpdir): a signal
 * that ends the program (SIGINT, SIGTERM, SIGHUP, SIGQUIT, and SIGABRT,
 * which the out-of-memory guard raises) removes them too, as a failure
 * would, then ends it as the signal does. A signal the program was
 * started ignoring stays ignored (and one handled already, handled). The slots are changed with those
 * signals blocked, so the handler sees whole paths.
 */
#define MAXTMP 16
#define MAXDIRS 4
#define MAXKIDS 64
static const int tmp_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT };
static char *volatile tmps[MAXTMP];
static char *volatile tdirs[MAXDIRS];
static volatile pid_t kids[MAXKIDS]; /* workers, ended with the program */

static void
on_signal(int sig)
{
	int i;

	for (i = 0; i < MAXKIDS; i++)
		if (kids[i] > 0)
			kill(kids[i], SIGKILL);
	for (i = 0; i < MAXTMP; i++)
		if (tmps[i] != NULL)
			unlink(tmps[i]);
	for (i = 0; i < MAXDIRS; i++)
		if (tdirs[i] != NULL)
			rmdir(tdirs[i]);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void
block_sigs(int how, sigset_t *old)
{
	sigset_t set;
	size_t i;

	sigemptyset(&set);
	for (i = 0; i < sizeof(tmp_sigs) / sizeof(tmp_sigs[0]); i++)
		sigaddset(&set, tmp_sigs[i]);
	sigprocmask(how, how == SIG_BLOCK ? &set : old, how == SIG_BLOCK ? old : NULL);
}

/*
 * The handler, once: a signal the program was started ignoring stays so,
 * and one that has a handler already keeps it (a fuzz harness's, which
 * must see an abort to keep its input).
 */
static void
tmp_install(void)
{
	static int installed;
	size_t i;

	if (installed)
		return;
	for (i = 0; i < sizeof(tmp_sigs) / sizeof(tmp_sigs[0]); i++) {
		struct sigaction sa, prev;

		if (sigaction(tmp_sigs[i], NULL, &prev) == 0 &&
		    ((prev.sa_flags & SA_SIGINFO) || prev.sa_handler != SIG_DFL))
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(tmp_sigs[i], &sa, NULL);
	}
	installed = 1;
}

/* mkstemp(path), the file registered for removal on a signal. */
static int
tmp_create(char *path)
{
	sigset_t old;
	size_t i;
	int fd;

	tmp_install();
	block_sigs(SIG_BLOCK, &old);
	fd = mkstemp(path);
	if (fd >= 0)
		for (i = 0; i < MAXTMP; i++)
			if (tmps[i] == NULL) {
				tmps[i] = path;
				break;
			}
	block_sigs(SIG_SETMASK, &old);
	return fd;
}

pid_t
cli_fork(void)
{
	sigset_t old;
	pid_t pid;
	size_t i;

	tmp_install();
	block_sigs(SIG_BLOCK, &old);
	pid = fork();
	if (pid == 0) {
		/* the parent's temporary files and workers are not the
		 * child's to remove or end */
		for (i = 0; i < MAXTMP; i++)
			tmps[i] = NULL;
		for (i = 0; i < MAXDIRS; i++)
			tdirs[i] = NULL;
		for (i = 0; i < MAXKIDS; i++)
			kids[i] = 0;
		for (i = 0; i < sizeof(tmp_sigs) / sizeof(tmp_sigs[0]); i++) {
			struct sigaction prev;

			if (sigaction(tmp_sigs[i], NULL, &prev) == 0 && prev.sa_handler == on_signal)
				signal(tmp_sigs[i], SIG_DFL);
		}
	} else if (pid > 0) {
		for (i = 0; i < MAXKIDS && kids[i] > 0; i++)
			;
		if (i < MAXKIDS)
			kids[i] = pid;
	}
	block_sigs(SIG_SETMASK, &old);
	return pid;
}

void
cli_reaped(pid_t pid)
{
	sigset_t old;
	size_t i;

	block_sigs(SIG_BLOCK, &old);
	for (i = 0; i < MAXKIDS; i++)
		if (kids[i] == pid)
			kids[i] = 0;
	block_sigs(SIG_SETMASK, &old);
}

/* Forget path (renamed or removed). */
static void
tmp_forget(const char *path)
{
	sigset_t old;
	size_t i;

	block_sigs(SIG_BLOCK, &old);
	for (i = 0; i < MAXTMP; i++)
		if (tmps[i] == path)
			tmps[i] = NULL;
	for (i = 0; i < MAXDIRS; i++)
		if (tdirs[i] == path)
			tdirs[i] = NULL;
	block_sigs(SIG_SETMASK, &old);
}

int
cli_tmpdir(char *dir, char **files, size_t nfiles)
{
	sigset_t old;
	size_t i, k, d = MAXDIRS, nfree = 0;
	int rc = -1;

	tmp_install();
	block_sigs(SIG_BLOCK, &old);
	for (i = 0; i < MAXTMP; i++)
		nfree += tmps[i] == NULL;
	for (i = 0; i < MAXDIRS && d == MAXDIRS; i++)
		if (tdirs[i] == NULL)
			d = i;
	if (d == MAXDIRS || nfree < nfiles) {
		errno = EMFILE;
	} else if (mkdtemp(dir) != NULL) {
		tdirs[d] = dir;
		for (i = 0, k = 0; i < MAXTMP && k < nfiles; i++)
			if (tmps[i] == NULL)
				tmps[i] = files[k++];
		rc = 0;
	}
	block_sigs(SIG_SETMASK, &old);
	return rc;
}

void
cli_tmpdir_remove(char *dir, char **files, size_t nfiles)
{
	size_t i;

	for (i = 0; i < nfiles; i++) {
		unlink(files[i]);
		tmp_forget(files[i]);
	}
	rmdir(dir);
	tmp_forget(dir);
}

int
out_open(struct out *o, const char *path, int binary)
{
	int fd;

	memset(o, 0, sizeof(*o));
	if (path == NULL || strcmp(path, "-") == 0) {
		if (binary && isatty(STDOUT_FILENO)) {
			errmsg("refusing to write a binary graph stream to a terminal (use -o FILE or a pipe)");
			return -1;
		}
		o->fp = stdout;
		return 0;
	}
	o->path = path;
	{
		struct stat st;

		/* A FIFO or a device is written into, not replaced. */
		if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
			o->fp = fopen(path, "wb");
			if (o->fp == NULL) {
				errmsg("%s: %s", path, strerror(errno));
				return -1;
			}
			return 0;
		}
	}
	o->tmp = xmalloc(strlen(path) + 16);
	sprintf(o->tmp, "%s.tmpXXXXXX", path);
	fd = tmp_create(o->tmp);
	if (fd >= 0) {
		/* mkstemp makes 0600; give the file the usual 0666 & ~umask. */
		mode_t mask = umask(0);

		umask(mask);
		fchmod(fd, 0666 & ~mask);
	}
	if (fd < 0 || (o->fp = fdopen(fd, "wb")) == NULL) {
		errmsg("%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd), unlink(o->tmp);
		tmp_forget(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
		return -1;
	}
	return 0;
}

int
out_commit(struct out *o)
{
	int rc = 0;

	if (o->path == NULL)
		return close_stdout();
	if (o->tmp == NULL) { /* not a regular file: written in place */
		if (fflush(o->fp) != 0 || ferror(o->fp) || fclose(o->fp) != 0) {
			errmsg("%s: write error: %s", o->path, strerror(errno ? errno : EIO));
			return 1;
		}
		return 0;
	}
	if (fflush(o->fp) != 0 || ferror(o->fp) || fclose(o->fp) != 0) {
		errmsg("%s: write error: %s", o->path, strerror(errno ? errno : EIO));
		unlink(o->tmp);
		rc = 1;
	} else if (rename(o->tmp, o->path) != 0) {
		errmsg("%s: %s", o->path, strerror(errno));
		unlink(o->tmp);
		rc = 1;
	}
	tmp_forget(o->tmp);
	free(o->tmp);
	o->tmp = NULL;
	return rc;
}

void
out_abort(struct out *o)
{
	if (o->path != NULL) {
		fclose(o->fp);
		if (o->tmp != NULL)
			unlink(o->tmp);
		tmp_forget(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
	}
}

int
close_stdout(void)
{
	int bad = ferror(stdout) != 0;

	if (fclose(stdout) != 0)
		bad = 1;
	if (bad) {
		errmsg("stdout: write error: %s", strerror(errno ? errno : EIO));
		return 1;
	}
	return 0;
}

int
gout_open(struct gout *g, const char *path, int level)
{
	g->name = path != NULL && strcmp(path, "-") != 0 ? path : "stdout";
	if (out_open(&g->out, path, 1) < 0)
		return -1;
	if (kg_writer_init(&g->w, g->out.fp, level) < 0) {
		errmsg("%s", g->w.err);
		out_abort(&g->out);
		return -1;
	}
	return 0;
}

/* The tool that failed first upstream, as an input's failed header
 * named it (gin_read); "" when none did. */
static char upstream_failed[64];

int
gout_close(struct gout *g, int rc, const char *producer)
{
	if (rc != 0 && g->out.path == NULL && !g->w.failed) {
		/* the stream stops here: a header that says who failed, for
		 * the readers downstream (formats/graph-stream.md) */
		struct kg_header h;
		char who[64];

		snprintf(who, sizeof(who), "%.*s", (int)strcspn(producer, " "), producer);
		memset(&h, 0, sizeof(h));
		h.producer = producer;
		h.rank = h.world = -1;
		h.failed = upstream_failed[0] != '\0' ? upstream_failed : who;
		kg_write_header(&g->w, &h);
	}
	if (kg_writer_finish(&g->w) < 0 && rc == 0) {
		errmsg("%s: %s", g->name, g->w.err);
		rc = 1;
	}
	kg_writer_release(&g->w);
	if (rc != 0) {
		out_abort(&g->out);
		if (g->out.path == NULL)
			fclose(stdout); /* the error is already told */
		return 1;
	}
	return out_commit(&g->out);
}

int
gin_open(struct gin *g, const char *path)
{
	g->name = input_name(path);
	g->fp = open_input(path);
	if (g->fp == NULL)
		return -1;
	if (kg_reader_init(&g->r, g->fp) < 0) {
		errmsg("%s: %s", g->name, g->r.err);
		if (g->fp != stdin)
			fclose(g->fp);
		return -1;
	}
	kg_rec_init(&g->rec);
	return 0;
}

int
gin_read(struct gin *g)
{
	int t = kg_read(&g->r, &g->rec);
	struct stat st;

	if (t < 0 && g->r.failed != NULL) {
		/* A tool upstream failed and said why. Through a pipe it ran
		 * beside this one: said once is enough, and the failure goes
		 * on downstream (gout_close). A file keeps no one's message. */
		snprintf(upstream_failed, sizeof(upstream_failed), "%s", g->r.failed);
		if (fstat(fileno(g->fp), &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
			return t;
	}
	if (t < 0)
		errmsg("%s: %s", g->name, g->r.err);
	return t;
}

void
gin_close(struct gin *g)
{
	kg_rec_release(&g->rec);
	kg_reader_release(&g->r);
	if (g->fp != stdin)
		fclose(g->fp);
}

int
cli_links(int link, const char *arg, struct comm_given *g, const char *usage)
{
	char err[256];

	if (link >= 0) {
		if (comm_given_parse(arg, g, link) < 0) {
			errmsg("invalid --net '%s' (GBPS,US)", arg);
			usage_exit(usage);
		}
		return 0;
	}
	if (comm_topology_builtin(arg, g, 1) == 0)
		return 0; /* a built-in topology by name */
	if (comm_given_load(arg, g, err, sizeof(err)) < 0) {
		errmsg("%s: %s", arg, err);
		return 1;
	}
	return 0;
}

void
json_str(FILE *f, const char *s, size_t len)
{
	size_t i;

	putc('"', f);
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			putc('\\', f);
			putc(c, f);
		} else if (c == '\n') {
			fputs("\\n", f);
		} else if (c == '\t') {
			fputs("\\t", f);
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
		} else if (c < 0x80) {
			putc(c, f);
		} else {
			/* Pass valid UTF-8 through; anything else becomes U+FFFD. */
			size_t n = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
			size_t k;

			if (n == 0 || i + n > len)
				n = 0;
			for (k = 1; k < n; k++)
				if (((unsigned char)s[i + k] & 0xc0) != 0x80)
					n = 0;
			if (n == 0) {
				fputs("\\ufffd", f);
			} else {
				fwrite(s + i, 1, n, f);
				i += n - 1;
			}
		}
	}
	putc('"', f);
}

int
cli_size(const char *s, uint64_t *out)
{
	static const char units[] = "kmgt";
	const char *u;
	char num[32];
	size_t len;
	int64_t v;
	int shift = 0;

	if (s == NULL || (len = strlen(s)) == 0 || len >= sizeof(num))
		return -1;
	memcpy(num, s, len + 1);
	if ((u = strchr(units, num[len - 1] | 0x20)) != NULL && num[len - 1] > '9') {
		shift = 10 * (int)(u - units + 1);
		num[--len] = '\0';
	}
	if (parse_i64(num, 1, (INT64_C(1) << 60) >> shift, &v) < 0)
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

void
cli_bytes_text(char *buf, size_t len, uint64_t n)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)n;
	int k = -1;

	if (n < 1024) {
		snprintf(buf, len, "%llu bytes", (unsigned long long)n);
		return;
	}
	while (v >= 1024 && k < 5)
		v /= 1024, k++;
	snprintf(buf, len, "%.1f %s", v, unit[k]);
}
