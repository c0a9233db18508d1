#!/usr/bin/env bats
# graphstat's work of a step: FLOPs from the operators' shapes, tokens,
# tokens/s, TFLOP/s per GPU and MFU. A hand-made graph worked out below,
# and the real traces of ../shared/gpu against their meta files.

load helpers

mkstream() { # JSON lines on stdin -> a graph stream on stdout
	"$ROOT/tests/tools/jsonl2kg" | zstd -q -c
}

# One rank, iteration 1: a step of 10000 ns on the main thread, and the
# launch calls of
# - addmm of [1000,1000] by [1000,1000] (a bias of 1000): 2 m n k = 2e9
#   FLOPs; 1000 x 1000 + 1000 = 1001000 parameters (the forward's);
# - a causal flash attention, [b 2, h 4, s 500, d 64]: 4 b h s s d / 2 =
#   256e6 forward, its backward 2.5 times that, 640e6;
# - the loss, 1000 targets: 1000 tokens;
# - mm of [1000,1000] by [1000,1000] in the backward, 2e9, launched twice
#   by one call (one `oc`): counted once.
# Hardware: 4e9 + 896e6 = 4.896e9; over 10 us, 489.6 TFLOP/s.
# Model: 6 N T = 6 x 1001000 x 1000 = 6.006e9, plus attention 3 x 256e6
# = 768e6: 6.774e9; over 10 us against 989 TFLOP/s (an H100): MFU 0.6849.
# Tokens/s: 1000 / 10 us = 1e8.
mkgraph() { # GPU TOOLS STEP_END
	mkstream <<-EOF2
	{"r":"header","format":"kgraph","major":1,"minor":8,"producer":"t","unit":"ns","rank":0,"iters":[1],"tools":[$2],"gpu":"$1"}
	{"r":"str","id":0,"s":"step"}
	{"r":"str","id":1,"s":"cudaLaunchKernel"}
	{"r":"str","id":2,"s":"aten::addmm"}
	{"r":"str","id":3,"s":"[[1000],[1000,1000],[1000,1000],[],[]]"}
	{"r":"str","id":4,"s":"aten::mm"}
	{"r":"str","id":5,"s":"[[1000,1000],[1000,1000]]"}
	{"r":"str","id":6,"s":"aten::_scaled_dot_product_flash_attention"}
	{"r":"str","id":7,"s":"[[2,4,500,64],[2,4,500,64],[2,4,500,64],[],[],[]]"}
	{"r":"str","id":8,"s":"aten::_scaled_dot_product_flash_attention_backward"}
	{"r":"str","id":9,"s":"[[2,4,500,64],[2,4,500,64],[2,4,500,64],[2,4,500,64],[2,4,500,64],[2,4,500]]"}
	{"r":"str","id":10,"s":"aten::nll_loss_forward"}
	{"r":"str","id":11,"s":"[[1000,10],[1000],[],[],[]]"}
	{"r":"proc","id":0,"k":"thread","pid":1,"tid":1,"main":true}
	{"r":"task","id":0,"p":0,"k":"cpu","n":0,"d":$3,"ts":0,"it":1,"ss":0,"se":$3}
	{"r":"task","id":1,"p":0,"k":"rt","n":1,"d":10,"ts":100,"it":1,"op":2,"sh":3,"oc":1,"ph":"fwd","mb":0,"ly":0,"ss":100,"se":110}
	{"r":"task","id":2,"p":0,"k":"rt","n":1,"d":10,"ts":200,"it":1,"op":6,"sh":7,"oc":2,"ph":"fwd","mb":0,"ly":0,"ss":200,"se":210}
	{"r":"task","id":3,"p":0,"k":"rt","n":1,"d":10,"ts":300,"it":1,"op":10,"sh":11,"oc":3,"ph":"fwd","mb":0,"ss":300,"se":310}
	{"r":"task","id":4,"p":0,"k":"rt","n":1,"d":10,"ts":400,"it":1,"op":8,"sh":9,"oc":4,"ph":"bwd","mb":0,"ly":0,"ss":400,"se":410}
	{"r":"task","id":5,"p":0,"k":"rt","n":1,"d":10,"ts":500,"it":1,"op":4,"sh":5,"oc":5,"ph":"bwd","mb":0,"ly":0,"ss":500,"se":510}
	{"r":"task","id":6,"p":0,"k":"rt","n":1,"d":10,"ts":600,"it":1,"op":4,"sh":5,"oc":5,"ph":"bwd","mb":0,"ly":0,"ss":600,"se":610}
	{"r":"end","tasks":7,"edges":0,"procs":1,"strs":12}
	EOF2
}

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	mkgraph "NVIDIA H100 80GB HBM3" '"kineto2graph 0.1"' 10000 > h100.kg
}

csv_tail() { # FILE ARGS...: the last three columns of the first row
	graphstat --csv "$@" | awk -F, 'NR == 2 { print $(NF - 2), $(NF - 1), $NF }'
}

@test "graphstat: tokens/s, TFLOP/s per GPU and MFU from the shapes, worked out by hand" {
	run -0 --separate-stderr graphstat --csv h100.kg
	[ -z "$stderr" ]
	[[ ${lines[0]} == *",unprofiled_ns,profiler_cost,tokens_per_s,tflops_per_gpu,mfu" ]]
	[ "$(csv_tail h100.kg)" = "100000000.0 489.600 0.6849" ]
	run -0 graphstat --json h100.kg
	jq -e '.tokens_per_s == 100000000 and .tflops_per_gpu == 489.6 and .mfu == 0.6849 and
		.flops.hardware == 4.896e9 and .flops.gemm == 4e9 and .flops.attention == 8.96e8 and
		.flops.model == 6.774e9 and .flops.attention_model == 7.68e8 and
		.flops.parameters == 1001000 and .flops.tokens == 1000 and .flops.causal == true and
		.flops.peak_tflops == 989 and .flops.gpus == 1' <<< "$output"
}

@test "graphstat: the text report gives the rates, the FLOPs behind them and the GPU's peak" {
	run -0 --separate-stderr graphstat --top 0 h100.kg
	[ -z "$stderr" ]
	# after the row and its error line; the loss's 1000 x 10 elements
	# are the other ops' 10 k
	[ "${lines[3]}" = "  throughput: 100000000 tokens/s (100000000 per GPU), 489.6 TFLOP/s per GPU, MFU 68.5%" ]
	[ "${lines[4]}" = "  FLOPs a step per GPU: hardware 4.896 G (GEMMs 4 G, attention 896 M, its mask taken as causal), model 6.774 G (6 N T: 1001000 parameters, 1000 tokens a data-parallel replica; attention 768 M); other ops 10 k apart (an element each)" ]
	[ "${lines[5]}" = "  tokens a step: 1000 (data-parallel degree 1, 1 GPU)" ]
	[ "${lines[6]}" = "  GPU peak: 989 TFLOP/s dense bf16/fp16 (H100 SXM)" ]
}

@test "graphstat: each GPU of the table has its peak, the first name that matches" {
	# MFU = 6.774e9 FLOPs / 10 us / peak
	mkgraph "NVIDIA A100-SXM4-80GB" '"kineto2graph 0.1"' 10000 > a100.kg
	[ "$(csv_tail a100.kg)" = "100000000.0 489.600 2.1712" ] # / 312
	mkgraph "AMD Instinct MI250X" '"kineto2graph 0.1"' 10000 > mi250x.kg
	[ "$(csv_tail mi250x.kg)" = "100000000.0 489.600 1.7687" ] # / 383, not MI250's 362
	mkgraph "NVIDIA H100 PCIe" '"kineto2graph 0.1"' 10000 > pcie.kg
	[ "$(csv_tail pcie.kg)" = "100000000.0 489.600 0.8960" ] # / 756
}

@test "graphstat: an unknown GPU gets FLOPs and tokens/s but no MFU, and the flag to give" {
	mkgraph "Mystery Accelerator" '"kineto2graph 0.1"' 10000 > x.kg
	[ "$(csv_tail x.kg)" = "100000000.0 489.600 " ]
	run -0 graphstat --top 0 x.kg
	[ "${lines[3]}" = "  throughput: 100000000 tokens/s (100000000 per GPU), 489.6 TFLOP/s per GPU" ]
	[ "${lines[6]}" = "  GPU peak: not known for Mystery Accelerator: no MFU (--peak-tflops TFLOPS)" ]
	# 6.774e9 / 10 us / 677.4 TFLOP/s = 1
	[ "$(csv_tail --peak-tflops 677.4 x.kg)" = "100000000.0 489.600 1.0000" ]
	run -0 graphstat --top 0 --peak-tflops 677.4 x.kg
	[ "${lines[6]}" = "  GPU peak: 677.4 TFLOP/s dense bf16/fp16 (--peak-tflops)" ]
}

@test "graphstat: a --peak-tflops that is not a positive number is a usage error" {
	for v in 0 -5 abc 12x '' 1e9; do
		run -2 --separate-stderr graphstat --peak-tflops "$v" h100.kg
		[ -z "$output" ]
		[ "${stderr_lines[0]}" = "graphstat: invalid --peak-tflops '$v'" ]
	done
}

@test "graphstat: a graph without shapes says what is missing and leaves the columns empty" {
	graphcat h100.kg | sed 's/,"sh":[0-9]*//' | mkstream > noshape.kg
	[ "$(csv_tail noshape.kg)" = "  " ]
	run -0 graphstat --json noshape.kg
	jq -e '.tokens_per_s == null and .mfu == null and .flops == null' <<< "$output"
	run -0 graphstat --top 0 noshape.kg
	[ "${lines[-1]}" = "  FLOPs, tokens/s and MFU: no operator shapes in the graph (record_shapes)" ]
}

@test "graphstat: a graph whose shapes have no loss nor lookup gets FLOPs but no tokens nor MFU" {
	graphcat h100.kg | sed 's/aten::nll_loss_forward/aten::mse_loss/' | mkstream > noloss.kg
	[ "$(csv_tail noloss.kg)" = " 489.600 " ]
	run -0 graphstat --top 0 noloss.kg
	[ "${lines[5]}" = "  tokens a step: no loss nor embedding call with shapes in the graph: no tokens/s, model FLOPs nor MFU" ]
}

@test "graphstat: --base shows the base's rates beside the prediction's" {
	# the prediction: the same work in 20 us, half the rates
	mkgraph "NVIDIA H100 80GB HBM3" '"kineto2graph 0.1","graph-scale-layers 0.1","graphsim 0.1"' \
		20000 > pred.kg
	run -0 --separate-stderr graphstat --top 0 --base h100.kg pred.kg
	[ -z "$stderr" ]
	# MFU 68.49 % -> 34.25 %: -34.2 points
	grep -qx '  throughput: 50000000 tokens/s (50000000 per GPU), 244.8 TFLOP/s per GPU, MFU 34.2%; base 100000000 tokens/s, 489.6 TFLOP/s per GPU, MFU 68.5% (MFU -34.2 points)' <<< "$output"
	[ "$(csv_tail --base h100.kg pred.kg)" = "50000000.0 244.800 0.3425" ]
	run -0 graphstat --json --base h100.kg pred.kg
	jq -e '.mfu == 0.3425 and .base_mfu == 0.6849 and .base_tokens_per_s == 100000000 and
		.base_tflops_per_gpu == 489.6' <<< "$output"
}

@test "graphstat: model FLOPs of every shared GPU trace within 2% of 6 N T plus causal attention from its meta file" {
	need_gpu
	for m in "$GPU"/gpt*_L4_H1024.meta.json "$GPU"/gptB_L8_H2560_ckpt.meta.json "$GPU"/gptB_L8_H2560_M2.meta.json; do
		[ -e "$m" ] || continue
		t=${m%.meta.json}.json.gz
		kineto2graph -q "$t" -o g.kg
		# T = micro_batch_size x seq x micro_batches; attention, causal:
		# 3 x (4 b s s hidden / 2) a layer and micro-batch = 6 L hidden seq T
		want=$(jq -r '(.micro_batch_size * .seq * .micro_batches) as $t |
			6 * .params * $t + 6 * .layers * .hidden * .seq * $t' "$m")
		got=$(graphstat --json g.kg | jq -s '.[0].flops.model')
		awk -v w="$want" -v g="$got" -v m="$m" 'BEGIN { d = (g - w) / w; if (d < 0) d = -d;
			if (d > 0.02) { print m ": " g " against " w; exit 1 } }'
	done
}
