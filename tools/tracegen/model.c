/*
 * The hidden timing model: how long a kernel, a copy or a collective
 * takes on a hardware profile, and the deterministic noise on top.
 *
 * It is deliberately not linear in the work: a GEMM runs in waves of
 * tiles over the SMs (a shape one tile past a full wave takes a whole
 * extra wave), its tile is chosen per shape and short reductions (small
 * K) run below peak; memory-bound kernels reach their bandwidth only on
 * large tensors; NCCL picks the fastest of three protocols per message,
 * so small messages are latency-bound, and a group that spans nodes runs
 * at the network's bandwidth and latency instead of NVLink's. Nothing
 * outside tracegen may use it.
 */
#include <math.h>

#include "tg.h"

static uint64_t
mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t
tg_hash(uint64_t a, uint64_t b, uint64_t c)
{
	return mix(mix(mix(a) ^ b) ^ c);
}

double
tg_unit(uint64_t h)
{
	return (double)(h >> 11) * 0x1.0p-53;
}

/* Irwin-Hall of four: close enough to normal, and bounded. */
double
tg_gauss(uint64_t h)
{
	double s = tg_unit(h);

	h = mix(h);
	s += tg_unit(h);
	h = mix(h);
	s += tg_unit(h);
	h = mix(h);
	s += tg_unit(h);
	return (s - 2.0) * 1.7320508075688772;
}

static int64_t
ns(double seconds)
{
	return (int64_t)llround(seconds * 1e9);
}

static int64_t
cdiv(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

/*
 * cuBLAS-like: of a few CTA tiles, the one that finishes first. A tile
 * runs at its SM's share of peak times an efficiency that grows with the
 * tile and with K (the pipeline must fill); tiles run in waves of one per
 * SM. Reading and writing the operands bounds it from below.
 */
int64_t
model_gemm(const struct tg_hw *hw, int64_t m, int64_t n, int64_t k, int fp32_out,
    struct gemm_shape *gs)
{
	static const struct {
		int tm, tn, block, smem, regs;
		double eff;
	} tiles[] = {
		{ 256, 128, 384, 213248, 168, 0.86 },
		{ 128, 256, 384, 213248, 168, 0.86 },
		{ 128, 128, 256, 164864, 154, 0.80 },
		{ 128, 64, 128, 98304, 128, 0.68 },
		{ 64, 128, 128, 98304, 128, 0.68 },
		{ 64, 64, 128, 49152, 96, 0.52 },
	};
	double per_sm = hw->tflops * 1e12 / hw->sms;
	double effk = (double)k / ((double)k + 160.0);
	double bytes = 2.0 * ((double)m * k + (double)k * n) + (fp32_out ? 8.0 : 2.0) * m * n;
	double tmem = bytes / (hw->mem_gbps * 1e9 * 0.85);
	double best = HUGE_VAL;
	size_t i, bi = 0;

	for (i = 0; i < sizeof(tiles) / sizeof(tiles[0]); i++) {
		int64_t nt = cdiv(m, tiles[i].tm) * cdiv(n, tiles[i].tn);
		int64_t waves = cdiv(nt, hw->sms);
		double t = waves * 2.0 * tiles[i].tm * tiles[i].tn * (double)k /
		    (per_sm * tiles[i].eff * effk);

		if (t < tmem)
			t = tmem;
		if (t < best)
			best = t, bi = i;
	}
	gs->tm = tiles[bi].tm, gs->tn = tiles[bi].tn;
	gs->block = tiles[bi].block, gs->smem = tiles[bi].smem, gs->regs = tiles[bi].regs;
	gs->gx = cdiv(n, gs->tn), gs->gy = cdiv(m, gs->tm);
	return ns(best + 2.5e-6);
}

/* A memory-bound kernel: launch floor, then bandwidth that small tensors do not reach. */
int64_t
model_mem(const struct tg_hw *hw, double bytes)
{
	double eff = 0.85 * bytes / (bytes + 1.5e6) + 0.01;

	return ns(1.8e-6 + bytes / (hw->mem_gbps * 1e9 * eff));
}

/*
 * Flash attention, causal: blocks of 128 query rows per (batch, head),
 * each over half the keys on average, in waves over the SMs. The
 * backward pass does 2.5 times the work at a lower efficiency.
 */
int64_t
model_flash(const struct tg_hw *hw, int64_t b, int64_t heads, int64_t s, int64_t d,
    int backward, int64_t *blocks)
{
	double per_sm = hw->tflops * 1e12 / hw->sms;
	int64_t nb = b * heads * cdiv(s, 128);
	int64_t waves = cdiv(nb, hw->sms);
	double keys = s > 128 ? (double)s / 2 + 64 : (double)s;
	double flop = 4.0 * 128 * keys * d * (backward ? 2.5 : 1.0);
	double eff = backward ? 0.45 : 0.62;

	*blocks = nb;
	return ns(waves * flop / (per_sm * eff) + 3e-6);
}

/*
 * NCCL: ring all-reduce (2(n-1) steps moving 2(n-1)/n of the message),
 * broadcast (pipelined over n-1 hops), point-to-point (one step). Each
 * protocol trades latency per step for bandwidth: LL is fast to start
 * and slow to stream, Simple the reverse; the fastest wins, as NCCL's
 * tuner picks it.
 */
int64_t
model_coll(const struct tg_hw *hw, int kind, int64_t bytes, int n, int internode,
    int *proto)
{
	static const double eff[] = { 0.30, 0.85, 0.97 };
	static const double latf[] = { 1.0, 1.8, 4.0 };
	double bw = (internode ? hw->net_gbps : hw->nvlink_gbps) * 1e9;
	double lat = (internode ? hw->net_us : hw->nvlink_us) * 1e-6;
	double steps, data, best = HUGE_VAL;
	int p;

	switch (kind) {
	case C_ALLREDUCE:
		steps = 2.0 * (n - 1);
		data = 2.0 * (n - 1) / n * (double)bytes;
		break;
	case C_BROADCAST:
		steps = n - 1;
		data = (double)bytes;
		break;
	case C_ALLGATHER:
	case C_REDUCESCATTER:
		/* bytes: the whole (gathered, or reduced) tensor */
		steps = n - 1;
		data = (double)(n - 1) / n * (double)bytes;
		break;
	default:
		steps = 1;
		data = (double)bytes;
		break;
	}
	*proto = P_SIMPLE;
	for (p = P_LL; p <= P_SIMPLE; p++) {
		double t = 4e-6 + steps * lat * latf[p] + data / (bw * eff[p]);

		if (t < best)
			best = t, *proto = p;
	}
	return ns(best);
}

/* Host-device copies over PCIe; a pageable one is staged, so slower. */
int64_t
model_copy(const struct tg_hw *hw, int64_t bytes, int d2h)
{
	(void)hw;
	return d2h ? ns(1.5e-6 + bytes / 8e9) : ns(2e-6 + bytes / 24e9);
}
