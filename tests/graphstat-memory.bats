#!/usr/bin/env bats
# graphstat: the predicted peak device memory (tools/graphstat/memest.h).
# Hand-written graphs (tests/fixtures/stat/memory*.jsonl) whose peaks
# and parts are worked out by hand in the comments; the H100 _mem traces
# of ../shared/gpu against torch.cuda's peaks in their .meta.json files.
#
# The fixtures' static state: one aten::linear launch with dims
# [[4,8],[16,8],[16]] holds a 16x8 weight and a 16 bias: 144
# parameters, at 4 bytes (no element type in the graph: assumed) 576
# bytes; Adam's two states 1152 bytes.

load helpers

mkstream() { # JSON lines on stdin -> a graph stream on stdout
	"$ROOT/tests/tools/jsonl2kg" | zstd -q -c
}

fixture() {
	mkstream < "$FIX/stat/$1.jsonl" > "$1.kg"
}

# The predicted peak, device memory and fits of the first CSV row.
pred_csv() {
	graphstat --csv "$@" | awk -F, 'NR == 2 { print $21 "," $22 "," $23 }'
}

@test "graphstat: the predicted peak replays the allocator events in the traced order over the counted state" {
	# memory.jsonl, traced order: aten::a (+1000, excursion 3000) peaks
	# at 3000, level 1000; aten::b (+500) 1500; aten::c (bwd, -900,
	# excursion 2600) peaks at 1500 + 2600 = 4100, level 600; the
	# optimizer's task (-600) ends at 0. 576 + 1152 + 4100 = 5828.
	# At aten::c's peak: activations 1000 (aten::a, fwd in layer 0),
	# logits and loss 500 (aten::b, fwd outside layers), temporaries
	# 2600 (aten::c's own excursion), gradients 0 (none allocated yet).
	fixture memory
	run -0 pred_csv memory.kg
	[ "$output" = "5828,," ]
	run -0 --separate-stderr graphstat --json memory.kg
	jq -e '.predicted_peak_bytes == 5828 and .predicted_memory == {"from": "allocator",
		"parameters": 576, "gradients": 0, "optimizer": 1152, "activations": 1000,
		"logits_loss": 500, "temporaries": 2600, "shard": 1, "unbalanced": false,
		"early_frees": 0}' <<< "$output"
	run -0 --separate-stderr graphstat memory.kg
	grep -q '^    rank 0, iteration 1: 0.000 GiB = .*, in aten::c (bwd, micro-batch 0, layer 0)$' <<< "$output"
	# an optimizer op names Adam (_foreach_addcdiv_): only the element
	# size is assumed
	grep -qx '    assumed: parameters of 4 bytes (no element type in the graph)' <<< "$output"
	grep -qx "    the GPU's memory: not in the graph (--device-memory BYTES)" <<< "$output"
}

@test "graphstat: the predicted peak follows the simulated order where the section has one" {
	# memory_sim.jsonl: the same tasks, simulated with aten::c before
	# aten::b: aten::a 3000, level 1000; aten::c 1000 + 2600 = 3600,
	# level 100; aten::b 600; the optimizer 0. 576 + 1152 + 3600 = 5328,
	# logits and loss 0 at the peak (aten::b has not run).
	fixture memory_sim
	run -0 pred_csv memory_sim.kg
	[ "$output" = "5328,," ]
	run -0 graphstat --json memory_sim.kg
	jq -e '.predicted_memory.logits_loss == 0 and .predicted_memory.activations == 1000' <<< "$output"
}

@test "graphstat: --device-memory says whether the predicted peak fits, and OOM where it does not" {
	fixture memory
	run -0 pred_csv --device-memory 5828 memory.kg
	[ "$output" = "5828,5828,1" ]
	run -0 pred_csv --device-memory 5827 memory.kg
	[ "$output" = "5828,5827,0" ]
	run -0 graphstat --json --device-memory 5827 memory.kg
	jq -e '.device_memory_bytes == 5827 and .fits == false' <<< "$output"
	run -0 graphstat --device-memory 5827 memory.kg
	grep -q '^    rank 0, iteration 1: 0.000 GiB of 0.000 GiB: OOM = ' <<< "$output"
	run -0 graphstat --device-memory 5828 memory.kg
	grep -q '^    rank 0, iteration 1: 0.000 GiB of 0.000 GiB: fits = ' <<< "$output"
}

@test "graphstat: a --device-memory that is not a positive byte count is a usage error" {
	fixture memory
	for v in 0 -1 12x ""; do
		run -2 --separate-stderr graphstat --device-memory "$v" memory.kg
		[ "${stderr_lines[0]}" = "graphstat: invalid --device-memory '$v'" ]
		[ "$output" = "" ]
	done
}

@test "graphstat: allocator events that do not balance are counted and reported, never a negative peak" {
	# memory_cut.jsonl: a window that starts mid-step: aten::x frees 400
	# it never saw allocated (level -400), aten::y (+1000, excursion
	# 1500) peaks 1500 above that lowest level; the step ends at 600,
	# away from its start. No parameters, no state: 1500.
	fixture memory_cut
	run -0 pred_csv memory_cut.kg
	[ "$output" = "1500,," ]
	run -0 graphstat --json memory_cut.kg
	jq -e '.predicted_memory.unbalanced == true and .predicted_memory.early_frees == 400 and
		([.predicted_memory | .parameters, .gradients, .optimizer, .activations,
		  .logits_loss, .temporaries] | min >= 0)' <<< "$output"
	run -0 graphstat memory_cut.kg
	grep -qx "    rank 0, iteration 1: allocator events that do not balance: the step ends away from its start; 400 bytes freed that the window did not see allocated (held at the start)" <<< "$output"
	grep -qx "    assumed: parameters of 4 bytes (no element type in the graph); Adam's two states a parameter (no optimizer op says which)" <<< "$output"
	# no launch carries shapes: the state is not counted, and it says so
	grep -qx "    missing: operator shapes (record_shapes): parameters and optimizer state not counted, the estimate is the step's allocations alone" <<< "$output"
}

@test "graphstat: allocator events past what a GPU holds are not used, and their sums never overflow" {
	# memory.jsonl with aten::b's net at 2^62 bytes (a fuzzed stream's,
	# fuzz/crashes/simstat/memory-overflow: the sums overflowed int64):
	# the events are not used, it says so, and the estimate is the
	# shapes' (144 parameters of 4 bytes, Adam's state, the linear's
	# kept input of 32 elements)
	sed 's/"ma":5500,"mn":500,"mx":500/"ma":5500,"mn":4611686018427387904,"mx":4611686018427387904/' \
	    "$FIX/stat/memory.jsonl" | mkstream > big.kg
	run -0 --separate-stderr graphstat big.kg
	grep -qx "    rank 0, iteration 1: 1 allocator events past what a GPU holds (a task's bytes past 2^39, or more than 2^22 events in an iteration): not used" <<< "$output"
	run -0 graphstat --json big.kg
	jq -e '.predicted_memory.from == "shapes"' <<< "$output"
}

@test "graphstat: shapes past what a GPU holds count nothing, and no count overflows" {
	# memory.jsonl's linear with dims of 10^23 and 10^13 x 10^8
	# elements: no tensor (past 2^44 elements), so the bias alone (16
	# parameters, 64 bytes); under
	# the sanitizers, no overflow (the dims parsers multiplied them)
	sed 's/"\[\[4,8\],\[16,8\],\[16\]\]"/"[[99999999999999999999999,9],[9999999999999,99999999],[16]]"/' \
	    "$FIX/stat/memory.jsonl" | mkstream > huge.kg
	run -0 --separate-stderr graphstat --json huge.kg
	jq -e '.predicted_memory.parameters == 64' <<< "$output"
}

@test "graphstat: micro-batches after the first do not allocate their gradients again" {
	# memory_mb.jsonl: three micro-batches, each +1000 forward (excursion
	# 1000), -600 backward (excursion 200): each leaves 400 (its
	# gradients). mb 0: 1000, then 1200; level 400. mb 1: 1400, then
	# 1600, level 800, given back to 400 at its end (accumulated in
	# place). mb 2 the same: 1600 again. Zeroing the gradients (-400)
	# ends at 0: balanced. Without giving back, mb 2 would peak at 2000.
	fixture memory_mb
	run -0 pred_csv memory_mb.kg
	[ "$output" = "1600,," ]
	run -0 graphstat --json memory_mb.kg
	jq -e '.predicted_memory.unbalanced == false' <<< "$output"
}

@test "graphstat: without allocator events the estimate comes from the forward ops' shapes, and says so" {
	# memory_shapes.jsonl: a cast of an 8x16 weight, then aten::addmm
	# [[16],[4,8],[8,16]] (its 4x8 input and the cast weight kept: 32 +
	# 128 elements at 2 bytes, 320), then aten::_log_softmax over 4x16
	# (64 elements: half logits, float log-probabilities and their
	# gradient, 10 bytes each, 640). Parameters 8x16 + 16 = 144: 576 and
	# 1152. At the backward's start 320 + 640 = 960 on top of the state;
	# at the optimizer's step the gradients (576) and a temporary list
	# of the parameters' size (576): 1152, more. 576 + 1152 + 1152 = 2880.
	fixture memory_shapes
	run -0 pred_csv memory_shapes.kg
	[ "$output" = "2880,," ]
	run -0 graphstat --json memory_shapes.kg
	jq -e '.predicted_memory == {"from": "shapes", "parameters": 576, "gradients": 576,
		"optimizer": 1152, "activations": 0, "logits_loss": 0, "temporaries": 576,
		"shard": 1, "unbalanced": false, "early_frees": 0}' <<< "$output"
	run -0 graphstat memory_shapes.kg
	grep -qx "  memory at its peak (predicted, no allocator events: from the forward ops' shapes):" <<< "$output"
	grep -qx "    missing: allocator events (profile_memory): activations are the inputs the forward's operators keep, coarser" <<< "$output"
}

@test "graphstat: an all-gather in the forward shards parameters and state by its group" {
	# memory_fsdp.jsonl: memory_shapes.jsonl with an all-gather of group
	# size 4 in the forward (FSDP): 576 / 4 = 144, 1152 / 4 = 288; the
	# backward's start (960) is now more than the optimizer's step (the
	# gradients and the temporary list, sharded: 144 + 144):
	# 144 + 288 + 320 + 640 = 1392.
	fixture memory_fsdp
	run -0 pred_csv memory_fsdp.kg
	[ "$output" = "1392,," ]
	run -0 graphstat memory_fsdp.kg
	grep -qx "    rank 0: parameters gathered in the forward (FSDP/ZeRO-3), the state divided by 4" <<< "$output"
}

@test "graphstat: a graph with neither allocator events nor shapes predicts nothing" {
	fixture basic
	run -0 pred_csv basic.kg
	[ "$output" = ",," ]
	run -0 graphstat --json basic.kg
	jq -e '.predicted_peak_bytes == null and .fits == null' <<< "$output"
}

@test "graphstat: on the H100 _mem traces the predicted peak is within 3% of torch.cuda's, and layers predict one another" {
	need_gpu
	for n in gpt_L4_H1024_mem gptB_L4_H2560_mem; do
		f=$GPU/$n
		kineto2graph -q -o "$n.kg" "$f.json.gz"
		graphsim "$n.kg" | graphstat --csv | awk -F, -v a="$(jq .peak_allocated_bytes "$f.meta.json")" '
			NR > 1 { n++; if ($21 < 0.97 * a || $21 > 1.03 * a) exit 1 } END { exit n == 0 }'
	done
	# 4 -> 8 layers against the L8 configuration's own meta file
	graph-scale-layers -q 8 gptB_L4_H2560_mem.kg | graphsim | graphstat --csv |
	    awk -F, -v a="$(jq .peak_allocated_bytes "$GPU/gptB_L8_H2560.meta.json")" '
		NR > 1 { n++; if ($21 < 0.97 * a || $21 > 1.03 * a) exit 1 } END { exit n == 0 }'
	# identity: the same layer count replays the same peak
	[ "$(graphsim gpt_L4_H1024_mem.kg | graphstat --csv | awk -F, 'NR == 2 { print $21 }')" = \
	  "$(graph-scale-layers -q 4 gpt_L4_H1024_mem.kg | graphsim | graphstat --csv | awk -F, 'NR == 2 { print $21 }')" ]
	# another hidden size (graph-scale-hidden scales the events with the
	# shapes): 2560 -> 3072 against that configuration's meta file
	graph-scale-hidden -q 3072 gptB_L4_H2560_mem.kg | graph-scale-layers -q 8 | graphsim |
	    graphstat --csv | awk -F, -v a="$(jq .peak_allocated_bytes "$GPU/gptB_L8_H3072.meta.json")" '
		NR > 1 { n++; if ($21 < 0.97 * a || $21 > 1.03 * a) exit 1 } END { exit n == 0 }'
	# a micro-batch more holds the first's gradients: more, by less than a step's activations
	one=$(graphsim gpt_L4_H1024_mem.kg | graphstat --csv | awk -F, 'NR == 2 { print $21 }')
	two=$(graph-scale-pp -q 1 --microbatches 2 gpt_L4_H1024_mem.kg | graphsim | graphstat --csv | awk -F, 'NR == 2 { print $21 }')
	[ "$two" -gt "$one" ]
}

@test "graphstat: element sizes come from the graph's Input types, and the GPU's memory from its header" {
	# memory_bf16.jsonl (format 1.5): aten::addmm with every operand
	# BFloat16 and no cast before it: bf16 parameters, 144 x 2 = 288,
	# trained in mixed precision (assumed for half parameters: a float
	# master copy and float Adam states, 12 bytes a parameter) 1728; its
	# 4x8 input kept at 2 bytes, 64; the log-softmax's float input over
	# 4x16: 64 x (4 + 4 + 2, the logits at the product's BFloat16) = 640.
	# 288 + 1728 + 64 + 640 = 2720, the header's gpu_mem: it fits (not
	# more than the memory).
	fixture memory_bf16
	run -0 pred_csv memory_bf16.kg
	[ "$output" = "2720,2720,1" ]
	run -0 graphstat --json memory_bf16.kg
	jq -e '.predicted_memory.parameters == 288 and .predicted_memory.optimizer == 1728' <<< "$output"
	run -0 graphstat memory_bf16.kg
	if grep -q 'parameters of 4 bytes' <<< "$output"; then return 1; fi
	grep -qx '    rank 0: half-precision parameters: a float master copy and float Adam states assumed (mixed precision, 12 bytes a parameter)' <<< "$output"
	# --device-memory overrides the header
	run -0 pred_csv --device-memory 2719 memory_bf16.kg
	[ "$output" = "2720,2719,0" ]
}

@test "graphstat: a forward operator run in the backward (checkpointing) keeps only each layer's input, and one layer's whole" {
	# memory_ckpt.jsonl: three layers, each aten::native_layer_norm over
	# 64x8 (its input kept: 512 x 2 = 1024 bytes, the layer's input) and
	# aten::addmm [[8],[64,8],[8,8]] (its input kept: 1024; 64 + 8
	# parameters), so 2048 a layer, 6144 in all; 3 x (16 + 72) = 264
	# parameters, 1056 and 2112 bytes of state. A native_layer_norm
	# launched in the backward: the forward is recomputed, so the layers
	# keep their inputs (3 x 1024) and one layer's whole (2048) at once:
	# 5120. The optimizer's step (1056 + 1056) is less.
	# 1056 + 2112 + 5120 = 8288; without the backward's one: 9312.
	fixture memory_ckpt
	run -0 pred_csv memory_ckpt.kg
	[ "$output" = "8288,," ]
	grep -v '"bwd"' "$FIX/stat/memory_ckpt.jsonl" | sed 's/"tasks":7/"tasks":6/' | mkstream > plain.kg
	run -0 pred_csv plain.kg
	[ "$output" = "9312,," ]
}
