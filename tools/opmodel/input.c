/*
 * opmodel's inputs: graph streams, Kineto traces and kernel-timing
 * sweeps, told apart by content, read into operator calls.
 *
 * A graph stream, or a trace through the kineto2graph program, goes to
 * stream.c. A sweep (the shared kernels.jsonl) has a {"meta"} line
 * naming the GPU, then one measurement a line; each row is turned into
 * the call an operator would make (aten::mm on [[m,k],[k,n]], ...) so
 * that a sweep row and a traced call are described alike.
 *
 * An input is read a buffer at a time through zlib (struct src), never
 * held whole: a graph stream goes to the reader as it comes, a trace to
 * kineto2graph, a sweep a line at a time.
 */
#define _GNU_SOURCE /* fopencookie */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yajl_tree.h>
#include <zlib.h>

#include "cli.h"
#include "kg.h"
#include "om.h"
#include "util.h"

void
calls_init(struct calls *cs)
{
	memset(cs, 0, sizeof(*cs));
}

void
calls_release(struct calls *cs)
{
	size_t i;

	for (i = 0; i < cs->n; i++) {
		free(cs->c[i].kernel);
		free(cs->c[i].op);
		free(cs->c[i].dims);
	}
	free(cs->c);
	memset(cs, 0, sizeof(*cs));
}

static ssize_t
src_get(struct src *s, char *buf, size_t size)
{
	int r, e;

	r = gzread(s->z, buf, (unsigned)(size > (1u << 30) ? (1u << 30) : size));
	if (r < 0) {
		gzerror(s->z, &e);
		s->err = e == Z_ERRNO && errno ? errno : EIO;
		return -1;
	}
	if (r == 0) {
		/* gzread stops quietly at a cut gzip member; gzerror tells */
		gzerror(s->z, &e);
		if (e == Z_BUF_ERROR) {
			s->cut = 1;
			return -1;
		}
	}
	return r;
}

static ssize_t
src_read(void *cookie, char *buf, size_t size)
{
	struct src *s = cookie;
	size_t n = 0;

	if (s->nl > 0 || s->sp > 0) {
		uint64_t k = s->nl > 0 ? s->nl : s->sp;

		n = k < size ? (size_t)k : size;
		memset(buf, s->nl > 0 ? '\n' : ' ', n);
		*(s->nl > 0 ? &s->nl : &s->sp) -= n;
		return (ssize_t)n;
	}
	while (n < size && s->ohead < s->nhead)
		buf[n++] = s->head[s->ohead++];
	if (n > 0)
		return (ssize_t)n;
	return src_get(s, buf, size);
}

static int
src_close(void *cookie)
{
	struct src *s = cookie;

	gzclose(s->z);
	free(s->head);
	s->head = NULL;
	return 0;
}

int
src_error(const struct src *s, const char *path)
{
	errmsg("%s: %s", path, s->cut ? "truncated gzip data" : strerror(s->err ? s->err : EIO));
	return 1;
}

/*
 * Open path ("-": stdin) as a src on *fp; 0, 1 after the message, or 2
 * when it holds nothing but whitespace ("empty input"). The first bytes
 * after the whitespace are in s->head (at least 8 where the input has
 * them).
 */
static int
src_open(struct src *s, const char *path, FILE **fp)
{
	static const cookie_io_functions_t io = { src_read, NULL, NULL, src_close };
	char buf[65536];
	ssize_t r, i;

	memset(s, 0, sizeof(*s));
	s->z = strcmp(path, "-") == 0 ? gzdopen(dup(0), "rb") : gzopen(path, "rb");
	if (s->z == NULL) {
		errmsg("%s: %s", path, strerror(errno ? errno : ENOMEM));
		return 1;
	}
	gzbuffer(s->z, 1 << 17);
	while (s->nhead < 8 && (r = src_get(s, buf, sizeof(buf))) > 0) {
		for (i = 0; s->nhead == 0 && i < r; i++) {
			if (buf[i] == '\n')
				s->nl++;
			else if (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r')
				s->sp++;
			else
				break;
		}
		s->head = xrealloc(s->head, s->nhead + (size_t)(r - i));
		memcpy(s->head + s->nhead, buf + i, (size_t)(r - i));
		s->nhead += (size_t)(r - i);
	}
	if (s->cut || s->err) {
		src_error(s, path);
		src_close(s);
		return 1;
	}
	if (s->nhead == 0) {
		errmsg("%s: empty input", path);
		src_close(s);
		return 2;
	}
	*fp = fopencookie(s, "rb", io);
	if (*fp == NULL) {
		errmsg("%s: %s", path, strerror(errno));
		src_close(s);
		return 1;
	}
	return 0;
}

void
add_call(struct calls *cs, const struct om_desc *d, double us, int src, const char *kernel,
    const char *op, const char *dims)
{
	struct mcall c;

	c.d = *d;
	c.us = us;
	c.src = src;
	c.kernel = xstrndup(kernel, strlen(kernel));
	c.op = xstrndup(op, strlen(op));
	c.dims = dims != NULL ? xstrndup(dims, strlen(dims)) : NULL;
	VEC_PUSH(cs->c, cs->n, cs->cap, c);
}

int
set_gpu(struct calls *cs, const char *path, const char *gpu, int sms, const struct read_opts *o)
{
	if (o->gpu != NULL)
		gpu = o->gpu;
	if (o->sms > 0)
		sms = o->sms;
	if (gpu == NULL || *gpu == '\0')
		return 0;
	if (cs->gpu[0] == '\0') {
		snprintf(cs->gpu, sizeof(cs->gpu), "%s", gpu);
		cs->gpu_file = path;
	} else if (!om_same_gpu(cs->gpu, gpu)) {
		errmsg("%s: a trace of %s, but %s is of %s: one model per GPU (--gpu to override)",
		    path, gpu, cs->gpu_file, cs->gpu);
		return 1;
	}
	if (cs->sms == 0 && sms > 0)
		cs->sms = sms;
	return 0;
}

static long long
num(yajl_val v, const char *key, int *ok)
{
	const char *path[] = { key, NULL };
	yajl_val x = yajl_tree_get(v, path, yajl_t_number);

	if (x == NULL || !YAJL_IS_INTEGER(x) || YAJL_GET_INTEGER(x) <= 0) {
		*ok = 0;
		return 0;
	}
	return YAJL_GET_INTEGER(x);
}

static double
dbl(yajl_val v, const char *key)
{
	const char *path[] = { key, NULL };
	yajl_val x = yajl_tree_get(v, path, yajl_t_number);

	return x != NULL ? YAJL_GET_DOUBLE(x) : NAN;
}

static const char *
str(yajl_val v, const char *key)
{
	const char *path[] = { key, NULL };
	yajl_val x = yajl_tree_get(v, path, yajl_t_string);

	return x != NULL ? YAJL_GET_STRING(x) : NULL;
}

/* A sweep row as an operator call: op, dims; 0 if the row is not one
 * operator's call. */
static int
row_call(yajl_val v, const char *op, int part, char *o, size_t ol, char *dims, size_t dl, int *layout)
{
	int ok = 1;
	long long m, n, k, b, h, s, d, t, c;

	*layout = -1;
	if (strcmp(op, "mm") == 0) {
		const char *l = str(v, "layout");

		m = num(v, "m", &ok), n = num(v, "n", &ok), k = num(v, "k", &ok);
		if (!ok || l == NULL)
			return -1;
		*layout = strcmp(l, "nt") == 0 ? 0 : strcmp(l, "nn") == 0 ? 1 :
		    strcmp(l, "tn") == 0 ? 2 : strcmp(l, "tt") == 0 ? 3 : -1;
		if (*layout < 0)
			return -1;
		snprintf(o, ol, "aten::mm");
		snprintf(dims, dl, "[[%lld,%lld],[%lld,%lld]]", m, k, k, n);
		return 1;
	}
	if (strcmp(op, "sdpa_causal") == 0) {
		b = num(v, "b", &ok), h = num(v, "heads", &ok), s = num(v, "s", &ok);
		d = num(v, "d", &ok);
		if (!ok)
			return -1;
		snprintf(o, ol, part ? "aten::_cudnn_attention_backward" :
		    "aten::_cudnn_attention_forward");
		snprintf(dims, dl, "[[%lld,%lld,%lld,%lld],[%lld,%lld,%lld,%lld],[%lld,%lld,%lld,%lld]]",
		    b, h, s, d, b, h, s, d, b, h, s, d);
		return 1;
	}
	if (strcmp(op, "adamw_foreach_step") == 0) {
		long long p = num(v, "params", &ok);

		if (!ok)
			return -1;
		snprintf(o, ol, OM_ADAMW_STEP);
		snprintf(dims, dl, "[[%lld]]", p);
		return 1;
	}
	t = num(v, "tokens", &ok);
	if (strcmp(op, "layer_norm_fwd") == 0 || strcmp(op, "layer_norm_fwd_bwd") == 0) {
		c = num(v, "h", &ok);
		if (!ok)
			return -1;
		if (part)
			snprintf(o, ol, "aten::native_layer_norm_backward"),
			snprintf(dims, dl, "[[%lld,%lld],[%lld,%lld],[],[%lld,1],[%lld,1],[%lld],[%lld],[]]",
			    t, c, t, c, t, t, c, c);
		else
			snprintf(o, ol, "aten::native_layer_norm"),
			snprintf(dims, dl, "[[%lld,%lld],[],[%lld],[%lld],[]]", t, c, c, c);
		return 1;
	}
	if (strcmp(op, "gelu_tanh") == 0 || strcmp(op, "add") == 0 || strcmp(op, "softmax") == 0) {
		c = num(v, "h", &ok);
		if (!ok)
			return -1;
		if (op[0] == 'g')
			snprintf(o, ol, "aten::gelu"), snprintf(dims, dl, "[[%lld,%lld],[]]", t, c);
		else if (op[0] == 'a')
			snprintf(o, ol, "aten::add"),
			snprintf(dims, dl, "[[%lld,%lld],[%lld,%lld],[]]", t, c, t, c);
		else
			snprintf(o, ol, "aten::_softmax"), snprintf(dims, dl, "[[%lld,%lld],[],[]]", t, c);
		return 1;
	}
	return 0;
}

/*
 * A sweep: a row's `us` is a median of CUDA-event pairs around each call.
 * Two rows give two calls: sdpa_causal's forward (`us`) and backward
 * (`us_fwd_bwd` less `us`), and layer_norm_fwd_bwd less the
 * layer_norm_fwd of the same shape. An adamw_foreach_step row is a
 * whole optimizer step, an operator of its own (OM_ADAMW_STEP) in the
 * optimizer class: it measures the GPU's bandwidth on fp32 tensors.
 * cross_entropy_fwd_bwd rows are several operators: counted, not used.
 */
static int
read_sweep(struct calls *cs, const char *path, FILE *in, const struct src *src,
    const struct read_opts *o, int sms_for)
{
	char *line = NULL, ebuf[256];
	size_t capline = 0;
	ssize_t nline;
	long long lno = 0;
	/* layer_norm_fwd by "tokens,h", for the backward rows */
	struct lnf { long long t, h; double us; } *ln = NULL;
	size_t nln = 0, capln = 0;
	struct pend { yajl_val v; long long lno; } *pend = NULL;
	size_t np = 0, capp = 0, i;
	double sdpa_f = NAN, sdpa_fb = NAN;
	int rc = 1;

	while ((nline = getline(&line, &capline, in)) > 0) {
		yajl_val v;

		if (line[nline - 1] == '\n')
			line[nline - 1] = '\0';
		lno++;
		if (line[strspn(line, " \t\r")] == '\0')
			continue;
		v = yajl_tree_parse(line, ebuf, sizeof(ebuf));
		if (v == NULL || !YAJL_IS_OBJECT(v)) {
			char *e = strchr(ebuf, '\n');

			if (e != NULL)
				*e = '\0';
			errmsg("%s: line %lld: %s", path, lno, v == NULL ? "invalid JSON" :
			    "not a JSON object");
			yajl_tree_free(v);
			goto out;
		}
		if (lno == 1) {
			const char *p[] = { "meta", NULL };
			yajl_val meta = yajl_tree_get(v, p, yajl_t_object);

			if (meta != NULL) {
				const char *g = str(meta, "gpu");
				int ok = 1, sms = (int)num(meta, "sms", &ok);

				if (set_gpu(cs, path, g, ok ? sms : 0, o) != 0) {
					yajl_tree_free(v);
					goto out;
				}
				yajl_tree_free(v);
				continue;
			}
		}
		{
			struct pend pe = { v, lno };

			VEC_PUSH(pend, np, capp, pe);
		}
	}
	if (ferror(in)) {
		src_error(src, path);
		goto out;
	}
	if (sms_for <= 0)
		sms_for = o->sms > 0 ? o->sms : cs->sms > 0 ? cs->sms : 132;
	/*
	 * First the layer norm forwards, for the backward rows, and SDPA's
	 * fastest calls. SDPA's host path (dispatch, cuDNN's plan lookup)
	 * takes 32 to 145 us a call on an H100, so the event pair times the
	 * host far above 40 us: against the profiled op sweep's kernels, the
	 * H100's forwards under five times the fastest call are 2-350% off,
	 * those above it 1.2% (H200: 1.7%). The fastest calls are all host.
	 */
	for (i = 0; i < np; i++) {
		const char *op = str(pend[i].v, "op");
		int ok = 1;

		if (op != NULL && strcmp(op, "sdpa_causal") == 0) {
			double f = dbl(pend[i].v, "us"), fb = dbl(pend[i].v, "us_fwd_bwd");

			if (f > 0 && (!(sdpa_f > 0) || f < sdpa_f))
				sdpa_f = f;
			if (fb > 0 && (!(sdpa_fb > 0) || fb < sdpa_fb))
				sdpa_fb = fb;
		} else if (op != NULL && strcmp(op, "layer_norm_fwd") == 0) {
			struct lnf x = { num(pend[i].v, "tokens", &ok), num(pend[i].v, "h", &ok),
				dbl(pend[i].v, "us") };

			if (ok)
				VEC_PUSH(ln, nln, capln, x);
		}
	}
	for (i = 0; i < np; i++) {
		yajl_val v = pend[i].v;
		const char *op = str(v, "op");
		double us = dbl(v, "us");
		int part, nparts;

		if (op == NULL || !(us > 0)) {
			errmsg("%s: line %lld: a row without \"op\" or \"us\"", path, pend[i].lno);
			goto out;
		}
		nparts = strcmp(op, "sdpa_causal") == 0 ? 2 : 1;
		for (part = 0; part < nparts; part++) {
			char oname[64], dims[256];
			struct om_call oc;
			struct om_desc d;
			double t = us;
			int layout, k;

			k = row_call(v, op, part || strcmp(op, "layer_norm_fwd_bwd") == 0, oname,
			    sizeof(oname), dims, sizeof(dims), &layout);
			if (k < 0) {
				errmsg("%s: line %lld: a %s row without its sizes", path, pend[i].lno, op);
				goto out;
			}
			if (k == 0) {
				cs->sweep_multi++;
				continue;
			}
			if (part == 1)
				t = dbl(v, "us_fwd_bwd") - us;
			if (strcmp(op, "layer_norm_fwd_bwd") == 0) {
				int ok = 1;
				long long tt = num(v, "tokens", &ok), hh = num(v, "h", &ok);
				size_t j;

				t = NAN;
				for (j = 0; j < nln; j++)
					if (ln[j].t == tt && ln[j].h == hh)
						t = us - ln[j].us;
			}
			if (!(t > 0)) {
				cs->sweep_bad++;
				continue;
			}
			/* below ~40 µs an event pair times the host's next launch */
			if (t < o->min_us || (part == 1 && us < o->min_us)) {
				cs->sweep_small++;
				continue;
			}
			if (nparts == 2) {
				double fb = dbl(v, "us_fwd_bwd");

				if (o->min_us > 0 && (us < SDPA_HOST * sdpa_f ||
				    fb < SDPA_HOST * sdpa_fb)) {
					cs->sweep_small++;
					continue;
				}
				/* a backward does 2.5 times a forward's work: a forward
				 * timed as long caught a stall */
				if (fb - us <= us) {
					cs->sweep_stall++;
					continue;
				}
			}
			oc.op = oname, oc.dims = dims, oc.kernel = NULL, oc.types = NULL;
			oc.kind = KG_KERN, oc.bytes = 0, oc.layout = layout;
			if (om_describe(&oc, sms_for, &d) < 0 || !d.sized) {
				cs->sweep_bad++;
				continue;
			}
			add_call(cs, &d, t, SRC_SWEEP, op, oname, dims);
		}
	}
	rc = 0;
out:
	for (i = 0; i < np; i++)
		yajl_tree_free(pend[i].v);
	free(pend);
	free(ln);
	free(line);
	return rc;
}

int
calls_read(struct calls *cs, const char *path, const struct read_opts *o, int sms_for)
{
	struct src src;
	FILE *in;
	int rc;

	path = input_name(path);
	rc = src_open(&src, path, &in);
	if (rc != 0)
		return 1;
	/* a sweep's first line is a whole object, {"meta" or {"op" */
	if ((src.nhead >= 7 && memcmp(src.head, "{\"meta\"", 7) == 0) ||
	    (src.nhead >= 5 && memcmp(src.head, "{\"op\"", 5) == 0))
		rc = read_sweep(cs, path, in, &src, o, sms_for);
	else if (src.nhead >= 4 && memcmp(src.head, "\x28\xb5\x2f\xfd", 4) == 0)
		rc = read_stream(cs, path, in, &src, o, sms_for); /* zstd's magic number */
	else
		rc = read_trace(cs, path, in, &src, o, sms_for);
	fclose(in);
	return rc;
}
