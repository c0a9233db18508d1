#include "comm.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"

/*
 * NCCL's ring model of a collective's time, by protocol (NCCL's
 * src/graph/tuning.cc, the versions of 2.8 to 2.18: baseLat, hwLat and
 * the bandwidth refinements of ncclTopoTuneModel): a base latency, a
 * latency a step over NVLink and over the network, and the share of the
 * link's bandwidth the protocol reaches. LL moves 8 bytes of data in 16
 * and NCCL counts a quarter of the bandwidth for an all-reduce or a
 * reduce (and across nodes), a third for the others; LL128 120 bytes in
 * 128 (0.92), and it is not used across nodes or for sends; Simple the
 * whole. NCCL takes the protocol of least time; so does comm_time.
 */
static const struct {
	double base, step[COMM_NLINK]; /* us */
} nccl_proto[3] = {
	{ 3.6, { 0.47, 2.7 } },  /* LL */
	{ 10.0, { 1.9, 4.0 } },  /* LL128 */
	{ 8.4, { 3.4, 9.6 } },   /* Simple */
};

double
comm_steps(int coll, int64_t n)
{
	if (n < 2)
		return 0;
	switch (coll) {
	case KG_COLL_ALLREDUCE:
		return 2.0 * (double)(n - 1);
	case KG_COLL_SEND:
	case KG_COLL_RECV:
	case KG_COLL_SENDRECV:
		return 1;
	default: /* all-gather, reduce-scatter, all-to-all, broadcast, reduce */
		return (double)(n - 1);
	}
}

double
comm_factor(int coll, int64_t n)
{
	if (n < 2)
		return 0;
	switch (coll) {
	case KG_COLL_ALLREDUCE:
		return 2.0 * (double)(n - 1) / (double)n;
	case KG_COLL_ALLGATHER:
	case KG_COLL_REDUCESCATTER:
	case KG_COLL_ALLTOALL:
		return (double)(n - 1) / (double)n;
	default: /* broadcast, reduce, send, receive */
		return 1;
	}
}

/* A sample as the fit sees it: steps, bytes moved a link, time. */
struct pt {
	double x, y, t;
};

static int
cmp_pt(const void *a, const void *b)
{
	const struct pt *p = a, *q = b;

	return p->y < q->y ? -1 : p->y > q->y;
}

/*
 * Fit t = a x + p y over v[0..n) by least squares on the relative error
 * (weights 1/t^2: small and large messages count alike), a and p kept
 * non-negative. Returns the mean absolute relative error, %.
 */
static double
fit_lin(const struct pt *v, size_t n, double *ap, double *pp)
{
	double sxx = 0, sxy = 0, syy = 0, sxt = 0, syt = 0, a = -1, p = -1, det, err = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		double w = 1 / (v[i].t * v[i].t);

		sxx += w * v[i].x * v[i].x, sxy += w * v[i].x * v[i].y, syy += w * v[i].y * v[i].y;
		sxt += w * v[i].x * v[i].t, syt += w * v[i].y * v[i].t;
	}
	det = sxx * syy - sxy * sxy;
	if (det > 1e-9 * sxx * syy) {
		a = (sxt * syy - syt * sxy) / det;
		p = (syt * sxx - sxt * sxy) / det;
	}
	if (a < 0 || p <= 0) {
		/* one term alone: latency, unless bandwidth fits clearly
		 * better (when the sizes do not tell them apart, the same) */
		double a1 = sxx > 0 ? sxt / sxx : 0, p1 = syy > 0 ? syt / syy : 0;
		double e1 = 0, e2 = 0;

		for (i = 0; i < n; i++) {
			e1 += fabs(a1 * v[i].x - v[i].t) / v[i].t;
			e2 += fabs(p1 * v[i].y - v[i].t) / v[i].t;
		}
		if (p1 > 0 && e2 < 0.99 * e1)
			a = 0, p = p1;
		else
			a = a1, p = 0;
	}
	for (i = 0; i < n; i++)
		err += fabs(a * v[i].x + p * v[i].y - v[i].t) / v[i].t;
	*ap = a;
	*pp = p;
	return n > 0 ? 100 * err / (double)n : 0;
}

/*
 * Fit one class: one line, or two split at a message size (NCCL picks
 * another protocol for small messages: less latency, less bandwidth)
 * when that fits at least a fifth better, each side with 4 samples or
 * more.
 */
static void
fit_class(const struct comm_sample *s, size_t n, int coll, int link, struct comm_class *c)
{
	struct pt *v = xmalloc((n + 1) * sizeof(*v));
	size_t i, k = 0, cut, best = 0;
	double a, p, a2, p2, e, e2, besterr;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < n; i++) {
		if (s[i].coll != coll || s[i].link != link || s[i].n < 2 || s[i].t <= 0)
			continue;
		v[k].x = comm_steps(coll, s[i].n);
		v[k].y = (double)s[i].bytes * comm_factor(coll, s[i].n);
		v[k++].t = (double)s[i].t;
		c->ymax = fmax(c->ymax, v[k - 1].y);
	}
	c->samples = k;
	if (k == 0) {
		free(v);
		return;
	}
	qsort(v, k, sizeof(*v), cmp_pt);
	besterr = fit_lin(v, k, &a, &p);
	c->seg[0].alpha = a;
	c->seg[0].beta = p > 0 ? 1 / p : 0;
	c->seg[0].upto = INFINITY;
	c->nseg = 1;
	c->mape = besterr;
	/* up to 32 cuts between distinct sizes */
	for (cut = 4; k >= 8 && cut + 4 <= k; cut += (k - 8) / 32 + 1) {
		if (v[cut - 1].y == v[cut].y)
			continue;
		e = fit_lin(v, cut, &a, &p);
		e2 = fit_lin(v + cut, k - cut, &a2, &p2);
		e = (e * (double)cut + e2 * (double)(k - cut)) / (double)k;
		if (e < besterr)
			besterr = e, best = cut;
	}
	if (best > 0 && besterr < 0.8 * c->mape) {
		fit_lin(v, best, &a, &p);
		fit_lin(v + best, k - best, &a2, &p2);
		c->seg[0].alpha = a;
		c->seg[0].beta = p > 0 ? 1 / p : 0;
		c->seg[0].upto = (v[best - 1].y + v[best].y) / 2;
		c->seg[1].alpha = a2;
		c->seg[1].beta = p2 > 0 ? 1 / p2 : 0;
		c->seg[1].upto = INFINITY;
		c->nseg = 2;
		c->mape = besterr;
	}
	/* one step count: comm_time splits the latency for another */
	for (i = 1; i < k && v[i].x == v[0].x; i++)
		;
	c->x0 = i == k ? v[0].x : 0;
	free(v);
}

void
comm_fit(const struct comm_sample *s, size_t n, struct comm_model *m)
{
	int c, l;

	memset(m, 0, sizeof(*m));
	for (c = 1; c < KG_NCOLL; c++)
		for (l = 0; l < COMM_NLINK; l++)
			fit_class(s, n, c, l, &m->c[c][l]);
}

/*
 * Line k's time. A fit on samples of one step count (one group size: a
 * data-parallel pair) does not tell a fixed cost from a latency a step:
 * for another step count its latency is split as NCCL's ring model splits
 * Simple's (8.4 us fixed, 3.4 us a step over NVLink, 9.6 over the
 * network), so that a group of another size is not charged all of it
 * for each step.
 */
static double
line_time(const struct comm_class *c, int k, int link, int coll, int64_t n, double y)
{
	double x = comm_steps(coll, n), lat = c->seg[k].c0 + c->seg[k].alpha * x;

	if (c->x0 > 0 && x != c->x0) {
		double b = nccl_proto[2].base, st = nccl_proto[2].step[link];

		lat = (c->seg[k].c0 + c->seg[k].alpha * c->x0) * (b + st * x) / (b + st * c->x0);
	}
	return lat + (c->seg[k].beta > 0 ? y / c->seg[k].beta : 0);
}

int64_t
comm_time(const struct comm_model *m, int coll, int64_t n, uint64_t bytes, int link,
    int *approx)
{
	const struct comm_class *c;
	double y;
	int k;

	*approx = 0;
	if (coll <= KG_COLL_NONE || coll >= KG_NCOLL || link < 0 || link >= COMM_NLINK)
		return -1;
	c = &m->c[coll][link];
	if (c->samples == 0) {
		link = !link;
		c = &m->c[coll][link];
		*approx = 1;
		if (c->samples == 0)
			return -1;
	}
	y = (double)bytes * comm_factor(coll, n);
	if (c->least) {
		double best = INFINITY;

		for (k = 0; k < c->nseg; k++)
			best = fmin(best, line_time(c, k, link, coll, n, y));
		return llround(best);
	}
	for (k = 0; k + 1 < c->nseg && y > c->seg[k].upto; k++)
		;
	return llround(line_time(c, k, link, coll, n, y));
}

int64_t
comm_time_mono(const struct comm_model *m, int coll, int64_t n, uint64_t bytes, int link,
    int *approx)
{
	const struct comm_class *c;
	double y, t;
	int64_t t0 = comm_time(m, coll, n, bytes, link, approx);
	int k;

	if (t0 < 0)
		return t0;
	c = &m->c[coll][link];
	if (c->samples == 0)
		c = &m->c[coll][link = !link];
	if (c->least || c->nseg < 2)
		return t0;
	y = (double)bytes * comm_factor(coll, n);
	t = (double)t0;
	for (k = 0; k + 1 < c->nseg && y > c->seg[k].upto; k++)
		t = fmax(t, line_time(c, k, link, coll, n, c->seg[k].upto));
	return llround(t);
}

int
comm_implausible(const struct comm_class *c, double gbps, char *why, size_t len)
{
	int k;

	for (k = 0; k < c->nseg; k++) {
		if (c->seg[k].alpha > COMM_MAX_STEP_US * 1e3) {
			snprintf(why, len, "over %g us a step", COMM_MAX_STEP_US);
			return 1;
		}
		if (c->seg[k].beta > 0 && c->seg[k].beta < gbps / COMM_MIN_BW_SHARE &&
		    c->ymax >= COMM_BW_BYTES) {
			snprintf(why, len, "under a %s of the link's %g GB/s",
			    COMM_MIN_BW_SHARE == 10 ? "tenth" : "fraction", gbps);
			return 1;
		}
	}
	return 0;
}

static int
given_set(struct comm_given *g, int link, double gbps, double us)
{
	if (!(gbps > 0) || gbps > 1e6 || !(us >= 0) || us > 1e6)
		return -1;
	g->set[link] = 1;
	g->nccl[link] = 0;
	g->gbps[link] = gbps;
	g->us[link] = us;
	return 0;
}

int
comm_given_parse(const char *s, struct comm_given *g, int link)
{
	char *end;
	double gbps, us;

	gbps = strtod(s, &end);
	if (end == s || *end != ',')
		return -1;
	s = end + 1;
	us = strtod(s, &end);
	if (end == s || *end != '\0')
		return -1;
	return given_set(g, link, gbps, us);
}

int
comm_given_load(const char *path, struct comm_given *g, char *err, size_t errlen)
{
	FILE *fp = fopen(path, "r");
	char line[512];
	long lineno = 0;

	if (fp == NULL) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), fp) != NULL) {
		char key[64], extra[2], *hash = strchr(line, '#');
		double a, b;
		int n;

		lineno++;
		if (hash != NULL)
			*hash = '\0';
		n = sscanf(line, "%63s %lf %lf %1s", key, &a, &b, extra);
		if (n <= 0)
			continue; /* blank */
		if (strcmp(key, "gpus-per-node") == 0) {
			if (n != 2 || a < 1 || a > (1 << 20) || a != (double)(int64_t)a) {
				snprintf(err, errlen, "line %ld: gpus-per-node takes a count", lineno);
				goto fail;
			}
			g->gpn = (int64_t)a;
		} else if (strcmp(key, "nvlink") == 0 || strcmp(key, "network") == 0) {
			if (n != 3 || given_set(g, key[0] == 'n' && key[1] == 'v' ? COMM_INTRA :
			    COMM_INTER, a, b) < 0) {
				snprintf(err, errlen, "line %ld: %s takes GB/s and microseconds a step",
				    lineno, key);
				goto fail;
			}
		} else {
			snprintf(err, errlen, "line %ld: unknown key '%s' (nvlink, network, "
			    "gpus-per-node)", lineno, key);
			goto fail;
		}
	}
	if (ferror(fp)) {
		snprintf(err, errlen, "%s", strerror(errno));
		goto fail;
	}
	fclose(fp);
	return 0;
fail:
	fclose(fp);
	return -1;
}

/*
 * Bandwidth: a GPU's peak one-way rate on each link (bus bandwidth as
 * the model means it). NVLink: the GPU's links x 25 GB/s a direction
 * (H100 SXM: 18 NVLink 4 links, 900 GB/s both ways; A100 SXM: 12 NVLink
 * 3, 600 GB/s; V100 SXM2: 6 NVLink 2, 300 GB/s); the network: the DGX
 * node's NICs shared by its 8 GPUs (DGX H100: 8 ConnectX-7 at 400 Gb/s,
 * 50 GB/s a GPU; DGX A100: 8 ConnectX-6 at 200 Gb/s, 25 GB/s; DGX-1V: 4
 * EDR InfiniBand at 100 Gb/s, 6.25 GB/s). Latency a step: NCCL's own
 * model of a ring step with its Simple protocol (src/graph/tuning.cc,
 * hwLat: 3.4 us over NVLink, 9.6 us over the network). Peaks: what NCCL
 * reaches on large messages is lower (nccl-tests' bus bandwidth is
 * typically 70-90% of them), so a prediction on them is optimistic.
 *
 * mi300x: an 8-GPU AMD Instinct MI300X platform (MI325X alike). Its
 * GPUs are a full mesh: each has 7 Infinity Fabric links, one to each
 * peer, of 128 GB/s both ways (64 GB/s a direction; AMD's MI300X data
 * sheet and CDNA 3 white paper: 896 GB/s peer to peer in all), 448 GB/s
 * one way when all 7 carry a collective of the 8 (RCCL lays several
 * rings over the mesh); a group of fewer reaches fewer links (a pair:
 * one, 64 GB/s), which one figure a link does not tell. The network: a
 * 400 Gb/s NIC a GPU, 50 GB/s (AMD's reference platform and the clouds
 * built on it, e.g. Azure's ND MI300X v5: 8 x 400 Gb/s InfiniBand).
 * Latency: RCCL is NCCL's fork and starts from its ring model; no figure
 * of RCCL's own is at hand, so NCCL's (3.4 and 9.6 us a step) stands.
 */
static const struct {
	const char *name;
	double gbps[COMM_NLINK], us[COMM_NLINK];
	int64_t gpn;
} topologies[] = {
	{ "h100", { 450, 50 }, { 3.4, 9.6 }, 8 },
	{ "a100", { 300, 25 }, { 3.4, 9.6 }, 8 },
	{ "v100", { 150, 6.25 }, { 3.4, 9.6 }, 8 },
	{ "mi300x", { 448, 50 }, { 3.4, 9.6 }, 8 },
};

/*
 * The built-in topology of a GPU, by a word of its name as the trace's
 * deviceProperties gives it ("NVIDIA H100 80GB HBM3", "Tesla
 * V100-SXM2-32GB", "AMD Instinct MI300X VF"). A PCIe card of a family
 * is given the family's SXM node (its links are slower). Not here: the
 * H800 and A800, whose NVLink is cut to 400 GB/s both ways; the MI300A
 * (an APU, 4 to a node); the MI250X, MI250 and MI210 (two dies a
 * package and links of three speeds between them; bridged PCIe cards):
 * a topology file says theirs.
 */
static const struct {
	const char *word, *topology;
} gpu_topologies[] = {
	{ "H100", "h100" },
	{ "H200", "h100" },  /* the same NVLink 4 and DGX network */
	{ "GH200", "h100" }, /* Grace Hopper: the H100's NVLink */
	{ "A100", "a100" },
	{ "V100", "v100" },
	{ "MI300X", "mi300x" },
	{ "MI325X", "mi300x" }, /* the MI300X's links and platform */
};

void
comm_class_given(struct comm_class *c, const struct comm_given *g, int coll, int link)
{
	int p, k = 0;

	c->samples = 1; /* given, not fitted */
	c->given = 1;
	c->mape = 0;
	c->from = 0;
	c->x0 = 0;
	if (!g->nccl[link]) {
		c->least = 0;
		c->nseg = 1;
		c->seg[0].upto = INFINITY;
		c->seg[0].c0 = 0;
		c->seg[0].alpha = g->us[link] * 1e3;
		c->seg[0].beta = g->gbps[link];
		return;
	}
	c->least = 1;
	for (p = 0; p < 3; p++) {
		double share = 1;

		if (p == 0)
			share = coll == KG_COLL_ALLREDUCE || coll == KG_COLL_REDUCE ||
			    link == COMM_INTER ? 0.25 : 1.0 / 3;
		if (p == 1) {
			if (link == COMM_INTER || coll == KG_COLL_SEND || coll == KG_COLL_RECV ||
			    coll == KG_COLL_SENDRECV)
				continue;
			share = 0.92;
		}
		c->seg[k].upto = INFINITY;
		c->seg[k].c0 = nccl_proto[p].base * 1e3;
		/* Simple's latency a step is the topology's own */
		c->seg[k].alpha = (p == 2 ? g->us[link] : nccl_proto[p].step[link]) * 1e3;
		c->seg[k].beta = g->gbps[link] * share;
		k++;
	}
	c->nseg = k;
}

void
comm_class_text(const struct comm_class *c, char *buf, size_t len)
{
	size_t n;
	int k;

	buf[0] = '\0';
	for (k = 0; k < c->nseg; k++) {
		n = strlen(buf);
		if (c->seg[k].c0 > 0)
			snprintf(buf + n, len - n, "%s%.2f us + ", k ? "; " : "", c->seg[k].c0 / 1e3);
		else
			snprintf(buf + n, len - n, "%s", k ? "; " : "");
		n = strlen(buf);
		if (c->seg[k].beta > 0)
			snprintf(buf + n, len - n, "%.2f us a step, %.1f GB/s", c->seg[k].alpha / 1e3,
			    c->seg[k].beta);
		else
			snprintf(buf + n, len - n, "%.2f us a step, no bandwidth term",
			    c->seg[k].alpha / 1e3);
		n = strlen(buf);
		if (!c->least && k + 1 < c->nseg)
			snprintf(buf + n, len - n, " (to %.0f bytes a link)", c->seg[k].upto);
	}
	n = strlen(buf);
	if (c->least)
		snprintf(buf + n, len - n, " (the least of NCCL's %s)", c->nseg == 3 ?
		    "LL, LL128 and Simple" : "LL and Simple");
}

const char comm_topology_names[] = "h100, a100, v100, mi300x";

const char *
comm_topology_for_gpu(const char *gpu)
{
	const char *p = gpu, *w;
	size_t i, n;

	while (p != NULL && *p != '\0') {
		/* the words: runs of letters and digits */
		while (*p != '\0' && !isalnum((unsigned char)*p))
			p++;
		for (w = p; isalnum((unsigned char)*p); p++)
			;
		n = (size_t)(p - w);
		for (i = 0; n > 0 && i < sizeof(gpu_topologies) / sizeof(gpu_topologies[0]); i++)
			if (strlen(gpu_topologies[i].word) == n &&
			    strncasecmp(w, gpu_topologies[i].word, n) == 0)
				return gpu_topologies[i].topology;
	}
	return NULL;
}

const char *
comm_topology_default(const char *gpu, char *why, size_t len)
{
	const char *t = comm_topology_for_gpu(gpu);

	if (why != NULL && len > 0) {
		if (t != NULL)
			why[0] = '\0';
		else if (gpu == NULL || gpu[0] == '\0')
			snprintf(why, len, "the stream names no GPU");
		else
			snprintf(why, len, "the GPU (%s) matches no built-in topology", gpu);
	}
	return t != NULL ? t : COMM_TOPOLOGY_DEFAULT;
}

int
comm_topology_builtin(const char *name, struct comm_given *g, int keep)
{
	size_t i;
	int l;

	for (i = 0; i < sizeof(topologies) / sizeof(topologies[0]); i++) {
		if (strcmp(name, topologies[i].name) != 0)
			continue;
		for (l = 0; l < COMM_NLINK; l++)
			if (!keep || !g->set[l]) {
				given_set(g, l, topologies[i].gbps[l], topologies[i].us[l]);
				g->nccl[l] = 1;
			}
		if (!keep || g->gpn == 0)
			g->gpn = topologies[i].gpn;
		return 0;
	}
	return -1;
}
