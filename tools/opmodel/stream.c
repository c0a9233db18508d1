/*
 * opmodel's graph-stream input: a stream's sections, each read as one
 * trace (its GPU tasks grouped into operator calls), and a Kineto trace
 * turned into such a stream by the kineto2graph program and read from
 * its pipe as it comes.
 *
 * Promises: the calls and messages of a trace are those of the stream
 * kineto2graph writes of it, named as the user named the trace; a
 * trace's cut gzip data is told as such, whatever kineto2graph made of
 * the bytes before it. Leaves to input.c the input's bytes (struct src)
 * and what is a sweep.
 */
#define _GNU_SOURCE /* pipe2, environ */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "kg.h"
#include "om.h"
#include "util.h"

/*
 * The calls of a section's GPU tasks: each task with the operator that
 * launched it and that operator's Input Dims, grouped into calls
 * (om_calls); a call's time is its tasks' traced time, its kernel the
 * longest. 0, or 1 after a message.
 */
static int
section_calls(struct calls *cs, const char *path, const struct kg_reader *r,
    const struct om_task *tk, size_t ntk, int withop, int withdims, int sms_for)
{
	uint32_t *call, nc;
	size_t i;

	if (withop == 0) {
		errmsg("%s: no GPU kernels launched by operators in the trace", path);
		return 1;
	}
	if (withdims == 0) {
		errmsg("%s: no operator shapes (the trace was recorded without record_shapes): "
		    "record with torch.profiler.profile(record_shapes=True)", path);
		return 1;
	}
	call = xmalloc((ntk > 0 ? ntk : 1) * sizeof(*call));
	nc = om_calls(tk, ntk, call);
	{
		/* per call: its time, its longest task */
		double *us = xcalloc(nc > 0 ? nc : 1, sizeof(*us));
		size_t *top = xmalloc((nc > 0 ? nc : 1) * sizeof(*top));

		for (i = 0; i < nc; i++)
			top[i] = SIZE_MAX;
		for (i = 0; i < ntk; i++) {
			uint32_t c = call[i];

			if (c == UINT32_MAX)
				continue;
			us[c] += (double)tk[i].dur / 1e3;
			if (top[c] == SIZE_MAX || tk[i].dur > tk[top[c]].dur)
				top[c] = i;
		}
		for (i = 0; i < nc; i++) {
			const struct om_task *x = &tk[top[i]];
			struct om_call oc;
			struct om_desc d;
			const char *op = x->op != KG_NONE ? kg_str(r, x->op) : "";
			const char *dims = x->sh != KG_NONE ? kg_str(r, x->sh) : NULL;
			const char *kn = kg_str(r, x->name);

			oc.op = op, oc.dims = dims, oc.kernel = kn;
			oc.types = x->ty != KG_NONE ? kg_str(r, x->ty) : NULL;
			oc.kind = x->kind, oc.bytes = x->bytes, oc.layout = -1;
			if (om_describe(&oc, sms_for, &d) < 0)
				continue;
			if (!d.sized)
				cs->unsized++;
			add_call(cs, &d, us[i], SRC_TRACE, kn != NULL ? kn : "", op, dims);
		}
		free(us);
		free(top);
	}
	free(call);
	return 0;
}

/*
 * A graph stream's sections, each as a trace: its header's GPU (`gpu`,
 * `gpu_sms`: the trace's deviceProperties entry for the device its
 * kernels ran on), its kernels, copies and sets with their traced
 * durations (`od`) and the operator call that launched them (`op`,
 * `sh`, `ty`, `oc`). A section's strings stay with the reader until its
 * end, where its calls are taken. 0; 1 after a message; -1 when the
 * stream could not be read, r->err untold (the caller knows whether its
 * writer said why).
 */
static int
read_graph(struct calls *cs, const char *path, struct kg_reader *r, const struct read_opts *o,
    int sms_for)
{
	struct kg_rec rec;
	struct om_task *tk = NULL;
	size_t ntk = 0, captk = 0;
	int rc = 0, type, sec_sms = 0, withdims = 0, withop = 0;

	kg_rec_init(&rec);
	while (rc == 0 && (type = kg_read(r, &rec)) > 0) {
		if (type == KG_R_HEADER) {
			const struct kg_header *h = &rec.header;
			int sms = h->gpu_sms > 0 && h->gpu_sms <= INT_MAX ? (int)h->gpu_sms : 0;

			if (set_gpu(cs, path, h->gpu, sms, o) != 0)
				rc = 1;
			sec_sms = sms_for > 0 ? sms_for : o->sms > 0 ? o->sms : sms > 0 ? sms :
			    cs->sms > 0 ? cs->sms : 132;
			ntk = 0;
			withop = withdims = 0;
		} else if (type == KG_R_TASK) {
			struct om_task x;

			if (rec.task.kind != KG_KERN && rec.task.kind != KG_CPY &&
			    rec.task.kind != KG_SET)
				continue;
			x.id = rec.task.id, x.proc = rec.task.proc, x.op = rec.task.op;
			x.sh = rec.task.shapes, x.name = rec.task.name, x.kind = rec.task.kind;
			x.ocall = rec.task.ocall, x.ty = rec.task.itypes;
			x.it = rec.task.iter, x.ts = rec.task.ts, x.dur = rec.task.odur;
			x.bytes = rec.task.bytes;
			if (x.kind == KG_KERN && x.op != KG_NONE) {
				withop++;
				if (x.sh != KG_NONE)
					withdims++;
			}
			VEC_PUSH(tk, ntk, captk, x);
		} else if (type == KG_R_END) {
			rc = section_calls(cs, path, r, tk, ntk, withop, withdims, sec_sms);
		}
	}
	if (rc == 0 && type < 0)
		rc = -1;
	kg_rec_release(&rec);
	free(tk);
	return rc;
}

/* Whether path ("-": stdin) is a pipe, whose writer ran beside this
 * program and said why it failed (tools/cli.c, gin_read). */
static int
piped(const char *path)
{
	struct stat st;
	int r = strcmp(path, "-") == 0 ? fstat(0, &st) : stat(path, &st);

	return r == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

/* A graph stream (a kineto2graph's output, in a file or a pipe). */
int
read_stream(struct calls *cs, const char *path, FILE *in, const struct src *src,
    const struct read_opts *o, int sms_for)
{
	struct kg_reader r;
	int rc;

	if (kg_reader_init(&r, in) < 0) {
		errmsg("%s: %s", path, r.err);
		return 1;
	}
	rc = read_graph(cs, path, &r, o, sms_for);
	if (rc < 0) {
		rc = 1;
		if (src->cut || src->err)
			src_error(src, path);
		else if (r.failed == NULL || !piped(path))
			errmsg("%s: %s", path, r.err);
	}
	kg_reader_release(&r);
	return rc;
}

/*
 * A Kineto trace's bytes, as src reads them (gzip undone, the leading
 * whitespace given back: byte offsets stay the file's), into
 * kineto2graph's standard input, on a thread of its own while the
 * caller reads what kineto2graph writes. SIGPIPE is blocked on it: a
 * kineto2graph that stopped reading ends the feed, not opmodel.
 */
struct feed {
	FILE *in;
	int fd;   /* the pipe's write end, closed when done */
};

static void *
feed_run(void *arg)
{
	struct feed *f = arg;
	static const struct timespec now = { 0, 0 };
	char buf[65536];
	sigset_t sp;
	size_t n, k;
	ssize_t w;
	int ok = 1;

	while (ok && (n = fread(buf, 1, sizeof(buf), f->in)) > 0) {
		for (k = 0; k < n; k += (size_t)w) {
			w = write(f->fd, buf + k, n - k);
			if (w < 0 && errno == EINTR)
				w = 0;
			else if (w < 0) {
				ok = 0;
				break;
			}
		}
	}
	close(f->fd);
	sigemptyset(&sp);
	sigaddset(&sp, SIGPIPE);
	while (sigtimedwait(&sp, NULL, &now) > 0)
		; /* the SIGPIPE a write raised, pending on this thread */
	return NULL;
}

/*
 * What kineto2graph said on its standard error (e[0..n), read whole),
 * each line as this program's: its name for the input it read ("-") is
 * path. Where it said nothing, how it ended.
 */
static void
relay(char *e, size_t n, const char *path, const char *k2g, int st)
{
	static const char pre[] = "kineto2graph: ";
	char *m, *nl;
	int said = 0;

	for (m = e; m < e + n; m = nl + 1) {
		nl = memchr(m, '\n', (size_t)(e + n - m));
		if (nl == NULL)
			nl = e + n;
		*nl = '\0';
		if (strncmp(m, pre, sizeof(pre) - 1) == 0)
			m += sizeof(pre) - 1;
		if (strncmp(m, "-: ", 3) == 0)
			errmsg("%s: %s", path, m + 3);
		else
			errmsg("%s", m);
		said = 1;
	}
	if (!said && WIFSIGNALED(st))
		errmsg("%s: %s: %s", path, k2g, strsignal(WTERMSIG(st)));
	else if (!said)
		errmsg("%s: %s exited %d", path, k2g, WEXITSTATUS(st));
}

/*
 * A Kineto trace: through kineto2graph (beside this program, else on
 * PATH) into a graph stream, read as it comes (read_graph). It runs
 * with -q (opmodel says nothing of a trace's coverage) and
 * --profiler-cost 0 (no host task's time matters here).
 */
int
read_trace(struct calls *cs, const char *path, FILE *in, const struct src *src,
    const struct read_opts *o, int sms_for)
{
	char *k2g = cli_sibling("kineto2graph");
	char *argv[] = { k2g, "-q", "--profiler-cost", "0", "-", NULL };
	char rerr[sizeof(((struct kg_reader *)0)->err)] = "";
	int fd[6] = { -1, -1, -1, -1, -1, -1 }; /* pipes: kineto2graph's stdin, stdout, stderr */
	posix_spawn_file_actions_t fa;
	sigset_t sp, old;
	struct feed f;
	struct kg_reader r;
	pthread_t th;
	FILE *out, *err;
	char buf[4096], *ebuf = NULL;
	size_t k, ne = 0;
	pid_t pid;
	int rc = -1, e, st, i;

	if (pipe2(fd, O_CLOEXEC) < 0 || pipe2(fd + 2, O_CLOEXEC) < 0 ||
	    pipe2(fd + 4, O_CLOEXEC) < 0) {
		errmsg("%s: %s", path, strerror(errno));
		rc = 1;
		goto out;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd[0], 0);
	posix_spawn_file_actions_adddup2(&fa, fd[3], 1);
	posix_spawn_file_actions_adddup2(&fa, fd[5], 2);
	e = posix_spawnp(&pid, k2g, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fd[0]), close(fd[3]), close(fd[5]);
	fd[0] = fd[3] = fd[5] = -1;
	if (e != 0) {
		errmsg("%s: cannot run %s: %s", path, k2g, strerror(e));
		rc = 1;
		goto out;
	}
	f.in = in, f.fd = fd[1];
	fd[1] = -1;
	sigemptyset(&sp);
	sigaddset(&sp, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &sp, &old);
	e = pthread_create(&th, NULL, feed_run, &f);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e != 0) {
		close(f.fd); /* kineto2graph reads an empty input */
		errmsg("%s: %s", path, strerror(e));
		rc = 1;
	}
	out = fdopen(fd[2], "rb");
	err = fdopen(fd[4], "rb");
	if (out == NULL || err == NULL)
		oom(BUFSIZ);
	fd[2] = fd[4] = -1;
	if (rc < 0) {
		if (kg_reader_init(&r, out) == 0)
			rc = read_graph(cs, path, &r, o, sms_for);
		if (rc < 0)
			snprintf(rerr, sizeof(rerr), "%s", r.err);
		kg_reader_release(&r);
	}
	fclose(out); /* a kineto2graph still writing ends on SIGPIPE */
	/* its standard error to its end before the feed is waited for: it
	 * never waits on a full pipe there while the feed waits on it */
	while ((k = fread(buf, 1, sizeof(buf), err)) > 0) {
		ebuf = xrealloc(ebuf, ne + k + 1);
		memcpy(ebuf + ne, buf, k);
		ne += k;
	}
	fclose(err);
	if (e == 0)
		pthread_join(th, NULL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (rc != 1 && (src->cut || src->err)) {
		/* the feed stopped there: kineto2graph read a cut trace */
		src_error(src, path);
		rc = 1;
	} else if (rc < 0 || (rc == 0 && st != 0)) {
		if (st != 0)
			relay(ebuf, ne, path, k2g, st);
		else
			errmsg("%s: %s: %s", path, k2g, rerr);
		rc = 1;
	}
	free(ebuf);
out:
	for (i = 0; i < 6; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	free(k2g);
	return rc;
}
