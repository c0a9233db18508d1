#!/usr/bin/env bats
# kineto2graph's dependency rules, one hand-written trace per rule.
#
# tests/fixtures/rules/NAME.json is a small Kineto trace written for the
# project; NAME.edges lists the edges it must give (as edges_by_name
# prints them), each after a comment saying why. Every number checked
# below is worked out by hand from the fixture, in the comment beside it.
# Fixture times are in µs, graph times in ns (×1000).

load helpers

RULES="$FIX/rules"

# Convert fixture NAME into NAME.kg (options before the name go to
# kineto2graph); it must succeed without a word on stderr.
k2g() {
	local name=$1
	shift
	run -0 --separate-stderr kineto2graph "$@" -o "$name.kg" "$RULES/$name.json"
	[ "$output" = "" ]
	[ "$stderr" = "" ]
}

# The edges of NAME.kg against NAME.edges: comments dropped, both sorted.
check_edges() {
	grep -v '^#' "$RULES/$1.edges" | sort >want.edges
	edges_by_name "$1.kg" | sort >got.edges
	diff -u want.edges got.edges
}

# edges_by_name, sorted.
sorted_edges() {
	edges_by_name "$1" | sort
}

# The edges of one kind, with their delay and runtime binding:
# "SRC -> DST dl=N on=STREAM via=TASK at=TASK", a task written NAME#CORR
# (NAME alone for a CPU op), STREAM the CUDA stream id, "-" where absent.
edge_info() {
	graphcat -r "$1" | jq -s -r --arg k "$2" '
		(map(select(.r == "task")) | INDEX(.id)) as $t |
		(map(select(.r == "proc")) | INDEX(.id)) as $p |
		def task($i):
			if $i == null then "-"
			else $t[$i | tostring] | .n + (if .corr then "#\(.corr)" else "" end)
			end;
		.[] | select(.r == "edge" and .k == $k) |
		"\(task(.src)) -> \(task(.dst)) dl=\(.dl // 0)" +
		" on=\(if .on == null then "-" else $p[.on | tostring].tid end)" +
		" via=\(task(.via)) at=\(task(.at))"' | sort
}

# One line per task matching the jq condition $2: the fields $3 (a jq
# string template body), in time order (ties by processor), not in id
# order: kineto2graph numbers the host's tasks, then the GPU's, each run
# in time order (the last test).
tasks() {
	graphcat -r "$1" | jq -s -r "map(select(.r == \"task\" and ($2))) | sort_by(.ts, .p) | .[] | \"$3\""
}

# The header as one JSON line (jq would round tbase, so it stays text).
header() {
	graphcat -r "$1" | head -n 1
}

@test "kineto2graph: nested cpu ops flatten into leaf tasks chained by thread edges whose delay is the host gap" {
	k2g thread
	check_edges thread

	# Leaves only: aten::parent, aten::mid and aten::with_call enclose
	# something; ProfilerStep#1 and fwd_range are annotations.
	run -0 tasks thread.kg 'true' '\(.k) \(.n)'
	[ "$output" = "cpu aten::child_a
cpu aten::child_b
rt cudaLaunchKernel
kern kern_t
cpu aten::tail" ]

	# Gaps between consecutive leaves: 1050-1030, 1125-1060, 1160-1135 µs.
	run -0 edge_info thread.kg thread
	[ "$output" = "aten::child_a -> aten::child_b dl=20000 on=- via=- at=-
aten::child_b -> cudaLaunchKernel#11 dl=65000 on=- via=- at=-
cudaLaunchKernel#11 -> aten::tail dl=25000 on=- via=- at=-" ]

	# ts from the first task (aten::child_a, 1010 µs); d is dur.
	run -0 tasks thread.kg '.k == "cpu"' '\(.n) \(.ts) \(.d)'
	[ "$output" = "aten::child_a 0 20000
aten::child_b 40000 10000
aten::tail 150000 10000" ]
	header thread.kg | grep -q '"tbase":1010000,'

	# The call's op (and the kernel's, through its launch) is the
	# innermost op around the call, with that op's Input Dims.
	run -0 tasks thread.kg '.k == "rt" or .k == "kern"' '\(.n) \(.op) \(.sh)'
	[ "$output" = "cudaLaunchKernel aten::with_call [[8],[]]
kern_t aten::with_call [[8],[]]" ]
}

@test "kineto2graph: launches join kernels by correlation and a stream runs its kernels in start order" {
	run -0 --separate-stderr kineto2graph -o launch_stream.kg "$RULES/launch_stream.json"
	[ "$stderr" = "kineto2graph: warning: $RULES/launch_stream.json: 1 GPU tasks have no launch in the trace" ]
	check_edges launch_stream

	# Both calls are named cudaLaunchKernel: the launch edges must join
	# equal correlations (21 and 22), not merely the same name. Rule 6
	# keeps a small gap on the edge that held the task last: kern_a
	# starts 1040 us, 20 us after its call ended (1020; kern_orphan ended
	# 1008), so its launch edge has dl 20000; kern_b waited for kern_a
	# (ended 1080, after its call's 1060) and starts 1085, so the 5 us go
	# on the stream edge and its launch edge has none.
	run -0 edge_info launch_stream.kg launch
	[ "$output" = "cudaLaunchKernel#21 -> kern_a#21 dl=20000 on=- via=- at=-
cudaLaunchKernel#22 -> kern_b#22 dl=0 on=- via=- at=-" ]
	run -0 edge_info launch_stream.kg stream
	[[ $output == *"kern_a#21 -> kern_b#22 dl=5000 "* ]]

	# A GPU task's op is its launch's op; kern_orphan has none.
	run -0 tasks launch_stream.kg '.k == "kern"' '\(.n) \(.op // "-")'
	[ "$output" = "kern_orphan -
kern_a aten::mm
kern_b aten::add" ]

	[ "$(cov launch_joined launch_stream.kg)" = 2 ]
	[ "$(cov launch_unjoined launch_stream.kg)" = 1 ]

	# -q silences the warning.
	run -0 --separate-stderr kineto2graph -q -o q.kg "$RULES/launch_stream.json"
	[ "$stderr" = "" ]
}

@test "kineto2graph: a cuda_sync Stream Wait Event binds the recorded stream's last task to the waiting stream's next task" {
	k2g event_explicit
	check_edges event_explicit

	# on: the recording stream (7, from the cuda_sync record, though the
	# thread last launched on 9); via: the record (correlation 33); at:
	# the wait (correlation 35).
	run -0 edge_info event_explicit.kg event
	[ "$output" = "kern_s7_last#31 -> kern_s20#37 dl=0 on=7 via=cudaEventRecord#33 at=cudaStreamWaitEvent#35" ]
	[ "$(cov wait_explicit event_explicit.kg)" = 1 ]
	[ "$(cov wait_inferred event_explicit.kg)" = 0 ]
	[ "$(cov wait_unresolved event_explicit.kg)" = 0 ]
}

@test "kineto2graph: the GPU's small delay after an event wait is kept on the event edge" {
	# event_explicit.json with kern_s20 starting 2 µs after kern_s7_last
	# ends (1100): rule 6 keeps the 2 µs the wait took as the event
	# edge's delay, as it keeps such gaps on launch and stream edges.
	jq -c '.traceEvents |= map(if .name == "kern_s20" then .ts = 1102 else . end)' \
		"$RULES/event_explicit.json" > late.json
	run -0 --separate-stderr kineto2graph -o late.kg late.json
	run -0 edge_info late.kg event
	[ "$output" = "kern_s7_last#31 -> kern_s20#37 dl=2000 on=7 via=cudaEventRecord#33 at=cudaStreamWaitEvent#35" ]
	[ "$(cov gap_kept late.kg)" = 0 ]
}

@test "kineto2graph: without cuda_sync records an event wait is inferred from the streams of the launches around it" {
	k2g event_inferred
	check_edges event_inferred

	run -0 edge_info event_inferred.kg event
	[ "$output" = "kern_s7_a#42 -> kern_s20#45 dl=0 on=7 via=cudaEventRecord#43 at=cudaStreamWaitEvent#44" ]
	[ "$(cov wait_inferred event_inferred.kg)" = 1 ]
	[ "$(cov wait_explicit event_inferred.kg)" = 0 ]
}

@test "kineto2graph: a stream synchronize waits for the stream's last kernel and keeps only its time after it" {
	k2g sync_stream
	check_edges sync_stream

	run -0 edge_info sync_stream.kg sync
	[ "$output" = "kern_sync_b#52 -> cudaStreamSynchronize#53 dl=0 on=7 via=cudaStreamSynchronize#53 at=-" ]

	# The call runs 1020-1075 µs, kern_sync_b 1040-1070 µs: d keeps
	# 1075-1070 = 5 µs, od the whole 55 µs.
	run -0 tasks sync_stream.kg '.n == "cudaStreamSynchronize"' '\(.d) \(.od)'
	[ "$output" = "5000 55000" ]
	[ "$(cov sync_bound sync_stream.kg)" = 1 ]
}

@test "kineto2graph: a device synchronize waits for the last kernel of every stream" {
	k2g sync_device
	check_edges sync_device

	run -0 edge_info sync_device.kg sync
	[ "$output" = "kern_dev_s7#61 -> cudaDeviceSynchronize#63 dl=0 on=7 via=cudaDeviceSynchronize#63 at=-
kern_dev_s9#62 -> cudaDeviceSynchronize#63 dl=0 on=9 via=cudaDeviceSynchronize#63 at=-" ]

	# The call runs 1020-1090 µs; the later kernel (kern_dev_s9) ends at
	# 1025+55 = 1080 µs: d = 10 µs, od = 70 µs.
	run -0 tasks sync_device.kg '.n == "cudaDeviceSynchronize"' '\(.d) \(.od)'
	[ "$output" = "10000 70000" ]
	[ "$(cov sync_bound sync_device.kg)" = 1 ]
}

@test "kineto2graph: an event synchronize waits for the task its cudaEventRecord captured" {
	k2g sync_event
	check_edges sync_event

	run -0 edge_info sync_event.kg sync
	[ "$output" = "kern_ev#71 -> cudaEventSynchronize#73 dl=0 on=7 via=cudaEventRecord#72 at=-" ]

	# The call runs 1020-1085 µs, kern_ev ends at 1080 µs (kern_ev_late,
	# launched after the record, does not count): d = 5 µs, od = 65 µs.
	run -0 tasks sync_event.kg '.n == "cudaEventSynchronize"' '\(.d) \(.od)'
	[ "$output" = "5000 65000" ]
}

@test "kineto2graph: a pageable device-to-host copy whose call outlasts it holds back the thread's next task" {
	k2g blocking_copy
	check_edges blocking_copy

	# dl: aten::after_copy starts 1065 µs, the copy ends 1030+20 = 1050 µs.
	run -0 edge_info blocking_copy.kg sync
	[ "$output" = "Memcpy DtoH (Device -> Pageable)#84 -> aten::after_copy dl=15000 on=7 via=cudaMemcpyAsync#84 at=-" ]
	[ "$(cov copy_blocking blocking_copy.kg)" = 1 ]

	# The blocking call keeps as d its own time: until the copy began
	# (1030 µs), less the wait for the stream's previous task,
	# kern_pre_copy, which ran until 1030 µs: nothing is left, d = 0.
	# The wait is what the sync edge and stream order stand for. The
	# other two calls' copies began before the calls returned (1004 in
	# 1002-1006, 1010 in 1007-1013): each keeps its time until then,
	# 2 and 3 µs (launch overlap).
	run -0 tasks blocking_copy.kg '.n == "cudaMemcpyAsync"' '\(.corr) \(.d) \(.od // .d)'
	[ "$output" = "81 2000 4000
82 3000 6000
84 0 43000" ]

	run -0 tasks blocking_copy.kg '.k == "cpy"' '\(.n) \(.by)'
	[ "$output" = "Memcpy HtoD (Pageable -> Device) 1024
Memcpy HtoD (Pinned -> Device) 256
Memcpy DtoH (Device -> Pageable) 4096" ]
}

@test "kineto2graph: each iteration's run of autograd-thread tasks hangs between main-thread tasks by handoff edges" {
	k2g handoff
	check_edges handoff

	# Step 1: aten::main_a ends 1050, aten::bwd_a starts 1065; aten::bwd_b
	# ends 1150, aten::main_b starts 1160. Step 2: aten::main_c ends
	# 1250, aten::bwd_c runs 1260-1300, aten::main_d starts 1320 (µs).
	run -0 edge_info handoff.kg handoff
	[ "$output" = "aten::bwd_b -> aten::main_b dl=10000 on=- via=- at=-
aten::bwd_c -> aten::main_d dl=20000 on=- via=- at=-
aten::main_a -> aten::bwd_a dl=15000 on=- via=- at=-
aten::main_c -> aten::bwd_c dl=10000 on=- via=- at=-" ]

	# The main thread (the ProfilerStep's) comes first though its tid is
	# the larger; thread names come from the metadata.
	run -0 sh -c "graphcat -r handoff.kg | jq -c 'select(.r == \"proc\") | [.id, .k, .tid, .n, .main // false]'"
	[ "$output" = '[0,"thread",100,"thread 100 (python)",true]
[1,"thread",50,"thread 50 (pt_autograd_0)",false]' ]
}

@test "kineto2graph: a backward call per micro-batch hands over and back once per call" {
	# handoff_mb.json, one step: fwd_0 1010-1050 (main), bwd_0 1060-1100
	# (autograd), fwd_1 1110-1150 (main), bwd_1a 1165-1185 and bwd_1b
	# 1190-1210 (autograd; nothing on the main thread between them: one
	# run), step 1230-1270 (main). Two runs, each hung between the main
	# thread's tasks around it, the delay the gap (µs -> ns).
	k2g handoff_mb
	run -0 edge_info handoff_mb.kg handoff
	[ "$output" = "aten::bwd_0 -> aten::fwd_1 dl=10000 on=- via=- at=-
aten::bwd_1b -> aten::step dl=20000 on=- via=- at=-
aten::fwd_0 -> aten::bwd_0 dl=10000 on=- via=- at=-
aten::fwd_1 -> aten::bwd_1a dl=15000 on=- via=- at=-" ]
	# The thread edges into the tasks a hand-off wakes keep no gap: the
	# thread waited for the other one, it did no work of its own (fwd_0
	# ends 1050, bwd_0 1100: fwd_1 waits for bwd_0; bwd_0 ends 1100,
	# fwd_1 1150: bwd_1a waits for fwd_1; fwd_1 ends 1150, bwd_1b 1210:
	# step waits for bwd_1b). A what-if that shortens the backward then
	# shortens the wait. bwd_1a -> bwd_1b keeps its 5 µs gap.
	run -0 edge_info handoff_mb.kg thread
	[ "$output" = "aten::bwd_0 -> aten::bwd_1a dl=0 on=- via=- at=-
aten::bwd_1a -> aten::bwd_1b dl=5000 on=- via=- at=-
aten::fwd_0 -> aten::fwd_1 dl=0 on=- via=- at=-
aten::fwd_1 -> aten::step dl=0 on=- via=- at=-" ]
	# and the replay puts fwd_1 after bwd_0, step after bwd_1b
	run -0 sh -c 'graphsim handoff_mb.kg | graphstat --csv | cut -d, -f3-5'
	[ "${lines[1]}" = "260000,260000,0.0000" ]
}

@test "kineto2graph: tasks take phase, micro-batch and layer from the ranges around them, innermost first" {
	# tags.json: "forward-backward" (1005-1205) says no phase (both
	# words); "microbatch_1/forward" (1010-1110) gives fwd and mb 1;
	# "decoder.layers.2" (1020-1060) layer 2 to aten::mm and to the
	# launch at 1040, and through it to its kernel gemm (which runs at
	# 1050-1080, after the range ends: a GPU task is tagged where its
	# launch is); "Layer 3" (1070-1100) layer 3; aten::mm_bwd runs on the
	# autograd thread: bwd, inferred, and the step's backward work ends
	# with it at 1190; on the main thread, aten::loss at 1150 (no range
	# says anything) starts before that: fwd, inferred; aten::zero_ at
	# 1215 after it: opt, inferred; "Optimizer.step#Adam.step" gives
	# aten::add_ opt.
	k2g tags
	run -0 tasks tags.kg 'true' '\(.n) \(.ph // "-") \(.mb // "-") \(.ly // "-")'
	[ "$output" = "aten::mm fwd 1 2
cudaLaunchKernel fwd 1 2
gemm fwd 1 2
aten::gelu fwd 1 3
aten::loss fwd - -
aten::mm_bwd bwd - -
aten::zero_ opt - -
aten::add_ opt - -" ]
	[ "$(cov tag_phase tags.kg)" = 5 ]
	[ "$(cov tag_phase_inferred tags.kg)" = 3 ]
	[ "$(cov tag_mb tags.kg)" = 4 ]
	[ "$(cov tag_layer tags.kg)" = 4 ]
}

@test "kineto2graph: a backward thread's task takes the micro-batch and phase of the main thread's ranges around the backward call" {
	# tags_bwd.json, one step: the main thread records
	# "microbatch_0/backward" (1060-1150) and "microbatch_1/backward"
	# (1210-1300) around its backward calls and runs nothing inside them;
	# the autograd thread runs aten::bwd_a (1075) inside its own
	# "layer_1/backward" (1070-1100), aten::bwd_b (1110) outside any of
	# its ranges, and aten::bwd_c (1220) with a launch (1225) of k_bwd.
	# bwd_a keeps layer 1 and its own range's phase, and takes mb 0 from
	# the main thread; bwd_b takes phase and mb 0 from the main thread;
	# the launch from mb 1's, and k_bwd where its launch is. aten::step
	# (1320) no range holds: opt, inferred.
	k2g tags_bwd
	run -0 tasks tags_bwd.kg 'true' '\(.n) \(.ph // "-") \(.mb // "-") \(.ly // "-")'
	[ "$output" = "aten::fwd_0 fwd 0 -
aten::bwd_a bwd 0 1
aten::bwd_b bwd 0 -
aten::fwd_1 fwd 1 -
cudaLaunchKernel bwd 1 -
k_bwd bwd 1 -
aten::step opt - -" ]
	# all but aten::step by a range; bwd_a alone has a layer
	[ "$(cov tag_phase tags_bwd.kg)" = 6 ]
	[ "$(cov tag_phase_inferred tags_bwd.kg)" = 1 ]
	[ "$(cov tag_mb tags_bwd.kg)" = 6 ]
	[ "$(cov tag_layer tags_bwd.kg)" = 1 ]
}

@test "kineto2graph: without ranges, micro-batches come from sends, receives and backward calls, layers from the repeating unit, the stage from the pipeline group" {
	# tags_infer.json, rank 7, one step, no range but ProfilerStep: on the
	# main thread aten::zero_ (1005), then twice a c10d::recv_ whose
	# record_param_comms names group "[3, 7]" (rank 7 second: stage 1),
	# a top-level cudaStreamWaitEvent, and a forward step: aten::to, two
	# repetitions of layer_norm, linear, gelu (sequence numbers 10-15,
	# then 17-22), aten::loss (16, 23); each step followed by a backward
	# call on the autograd thread: LossBackward0, then per layer in
	# reverse Gelu-, Linear-, NativeLayerNormBackward0 (the forward ops'
	# numbers) and an AccumulateGrad with none; the second call's
	# LinearBackward0 launches gemm_bwd. Two steps, two calls: micro-
	# batches 0 and 1. Steps start at their first aten::to (the mode of
	# the pieces' first ops): zero_ and the receives' waits are in none.
	# Layers: the unit repeats twice in a step, stage 1 of an even split:
	# 2 and 3; a backward node takes its forward op's layer, AccumulateGrad
	# the node's before it; the losses are in no layer.
	k2g tags_infer
	run -0 tasks tags_infer.kg 'true' '\(.n) \(.ph // "-") \(.mb // "-") \(.ly // "-") \(.st // "-")'
	[ "$output" = "aten::zero_ fwd - - 1
record_param_comms fwd - - 1
cudaStreamWaitEvent fwd - - 1
aten::to fwd 0 - 1
aten::layer_norm fwd 0 2 1
aten::linear fwd 0 2 1
aten::gelu fwd 0 2 1
aten::layer_norm fwd 0 3 1
aten::linear fwd 0 3 1
aten::gelu fwd 0 3 1
aten::loss fwd 0 - 1
LossBackward0 bwd 0 - 1
GeluBackward0 bwd 0 3 1
LinearBackward0 bwd 0 3 1
NativeLayerNormBackward0 bwd 0 3 1
torch::autograd::AccumulateGrad bwd 0 3 1
GeluBackward0 bwd 0 2 1
LinearBackward0 bwd 0 2 1
NativeLayerNormBackward0 bwd 0 2 1
torch::autograd::AccumulateGrad bwd 0 2 1
record_param_comms fwd - - 1
cudaStreamWaitEvent fwd - - 1
aten::to fwd 1 - 1
aten::layer_norm fwd 1 2 1
aten::linear fwd 1 2 1
aten::gelu fwd 1 2 1
aten::layer_norm fwd 1 3 1
aten::linear fwd 1 3 1
aten::gelu fwd 1 3 1
aten::loss fwd 1 - 1
LossBackward0 bwd 1 - 1
GeluBackward0 bwd 1 3 1
LinearBackward0 bwd 1 3 1
NativeLayerNormBackward0 bwd 1 3 1
torch::autograd::AccumulateGrad bwd 1 3 1
GeluBackward0 bwd 1 2 1
cudaLaunchKernel bwd 1 2 1
NativeLayerNormBackward0 bwd 1 2 1
gemm_bwd bwd 1 2 1
torch::autograd::AccumulateGrad bwd 1 2 1
aten::add_ opt - - 1" ]
	# 41 tasks: all but zero_, the receives' and waits' 4 and add_ have
	# a micro-batch (35); a layer: 6 forward and 8 backward tasks in the
	# first, 6 and 9 in the second (the launch and its kernel for
	# LinearBackward0): 29; no range says any of it
	[ "$(cov tag_mb_inferred tags_infer.kg)" = 35 ]
	[ "$(cov tag_layer_inferred tags_infer.kg)" = 29 ]
	[ "$(cov tag_stage_inferred tags_infer.kg)" = 41 ]
	[ "$(cov tag_mb tags_infer.kg)" = 0 ]
	[ "$(cov tag_stage_unknown tags_infer.kg)" = 0 ]

	# a kernel whose launch is not in the trace has no call to be tagged
	# where: the stage all the same (the rank's)
	jq '.traceEvents += [{"ph": "X", "cat": "kernel", "name": "early", "pid": 0, "tid": 7,
	    "ts": 1001, "dur": 2, "args": {"stream": 7, "device": 0, "correlation": 999}}]' \
	    "$RULES/tags_infer.json" >early.json
	run -0 --separate-stderr kineto2graph -q -o early.kg early.json
	run -0 tasks early.kg '.n == "early"' '\(.ph // "-") \(.mb // "-") \(.st // "-")'
	[ "$output" = "- - 1" ]
}

@test "kineto2graph: what the structure does not give is left unset and counted" {
	# tags_infer.json less its group's ranks: a rank with receives and
	# no stage; no global layer number either; micro-batches still
	sed 's/, "Process Group Ranks": "\[3, 7\]"//' "$RULES/tags_infer.json" >nostage.json
	run -0 --separate-stderr kineto2graph -o nostage.kg nostage.json
	[ "$(cov tag_stage_unknown nostage.kg)" = 41 ]
	[ "$(cov tag_stage_inferred nostage.kg)" = 0 ]
	[ "$(cov tag_layer_inferred nostage.kg)" = 0 ]
	[ "$(cov tag_mb_inferred nostage.kg)" = 35 ]
	run -0 tasks nostage.kg '.n == "aten::gelu"' '\(.mb) \(.ly // "-") \(.st // "-")'
	[ "$output" = "0 - -
0 - -
1 - -
1 - -" ]

	# without sequence numbers: forward layers from the names, none in
	# the two backward calls (counted); micro-batches by the calls' order.
	# Layers: the 6 forward layer tasks of each step
	sed 's/"Sequence number": [0-9]*//' "$RULES/tags_infer.json" >noseq.json
	run -0 --separate-stderr kineto2graph -o noseq.kg noseq.json
	[ "$(cov tag_layer_noseq noseq.kg)" = 2 ]
	[ "$(cov tag_layer_inferred noseq.kg)" = 12 ]
	[ "$(cov tag_mb_inferred noseq.kg)" = 35 ]

	# a main-thread task in the middle of the second backward call (at
	# 1378.5, between its 4th and 5th nodes) cuts it in two runs: two
	# forward steps, three calls: no micro-batch in the iteration, and
	# one iteration counted; the layers stand, but for the AccumulateGrad
	# that now starts a call (no sequence number, no node before it): 28
	jq '.traceEvents += [{"ph": "X", "cat": "cpu_op", "name": "aten::noise", "pid": 100,
	    "tid": 100, "ts": 1378.5, "dur": 1, "args": {}}]' "$RULES/tags_infer.json" >split.json
	run -0 --separate-stderr kineto2graph -o split.kg split.json
	[ "$(cov tag_mb_unmatched split.kg)" = 1 ]
	[ "$(cov tag_mb_inferred split.kg)" = 0 ]
	[ "$(cov tag_layer_inferred split.kg)" = 28 ]
}

# One line per task of a one-rank graph, keyed so that two conversions
# of one job with and without its ranges match: runtime calls and GPU
# tasks by kind and correlation, CPU ops by thread and place on it; then
# phase, micro-batch, layer and stage. Sorted.
tag_lines() {
	graphcat -r "$1" | jq -s -r '
		map(select(.r == "task")) as $t |
		def tags: "\(.ph // "-") \(.mb // "-") \(.ly // "-") \(.st // "-")";
		($t | map(select(.corr != null) | "\(.k) \(.corr) " + tags)) +
		($t | map(select(.corr == null)) | group_by(.p) |
		    map(to_entries | map("cpu \(.value.p)/\(.key) " + (.value | tags))) | add // []) |
		.[]' | sort
}

@test "kineto2graph: layers come from the program's nn.Module calls where the trace has them" {
	# tags_module.json: tags_infer.json without the pipeline (no receive:
	# stage 0) whose second block runs relu, not gelu, so no unit of ops
	# repeats; python_function events name the modules: GPT_0 around each
	# forward step (one instance: no layer class), Block_0 (ts +8 to +37)
	# around layer_norm, linear, gelu and Block_1 (+38 to +67) around
	# layer_norm, linear, relu, Linear_0 and Linear_1 inside them (two
	# instances, less time than the blocks). Each step's Block_k is layer
	# k; backward nodes take their forward op's layer by sequence number,
	# AccumulateGrad the node's before it; aten::to and the loss are in no
	# layer. A python_function that is no module call stays skipped.
	k2g tags_module
	run -0 tasks tags_module.kg 'true' '\(.n) \(.ph // "-") \(.mb // "-") \(.ly // "-")'
	[ "${lines[0]}" = "aten::to fwd 0 -" ]
	[ "$(printf '%s\n' "${lines[@]:1:7}" | tr '\n' ';')" = "aten::layer_norm fwd 0 0;aten::linear fwd 0 0;aten::gelu fwd 0 0;aten::layer_norm fwd 0 1;aten::linear fwd 0 1;aten::relu fwd 0 1;aten::loss fwd 0 -;" ]
	[ "$(printf '%s\n' "${lines[@]:8:9}" | tr '\n' ';')" = "LossBackward0 bwd 0 -;ReluBackward0 bwd 0 1;LinearBackward0 bwd 0 1;NativeLayerNormBackward0 bwd 0 1;torch::autograd::AccumulateGrad bwd 0 1;GeluBackward0 bwd 0 0;LinearBackward0 bwd 0 0;NativeLayerNormBackward0 bwd 0 0;torch::autograd::AccumulateGrad bwd 0 0;" ]
	[ "$(cov tag_layer_modules tags_module.kg)" = 2 ]
	[ "$(cov tag_layer_steps tags_module.kg)" = 2 ]
	[ "$(cov tag_layer_repeats tags_module.kg)" = 2 ]
	[ "$(cov skip:python_function tags_module.kg)" = 2 ]
	# the same trace without the module calls: no repeated unit, no layer
	jq -c '{traceEvents: [.traceEvents[] | select(.cat != "python_function")]}' \
	    "$RULES/tags_module.json" > nomod.json
	kineto2graph -o nomod.kg nomod.json
	[ "$(tasks nomod.kg '.ly != null' '\(.n)')" = "" ]
	[ "$(cov tag_layer_norepeat nomod.kg)" = 2 ]
	[ "$(cov tag_layer_steps nomod.kg)" = 0 ]
}

@test "kineto2graph: layers come from the ops' Module Hierarchy where the trace has it" {
	# tags_modh.json: tags_module.json without the python_function events;
	# each forward op names its modules instead, as TorchScript models
	# record them: "top(GPT)::forward" around every op, and
	# ".blocks.0(Block)::forward" (or 1) inside for the ops that
	# Block_0 (Block_1) held there, ".fc(Linear)::forward" (no instance
	# number: no layer class) inside for the linears. The same layers as
	# from the calls.
	k2g tags_modh
	k2g tags_module
	diff <(tasks tags_modh.kg 'true' '\(.n) \(.ph // "-") \(.mb // "-") \(.ly // "-")') \
	    <(tasks tags_module.kg 'true' '\(.n) \(.ph // "-") \(.mb // "-") \(.ly // "-")')
	[ "$(cov tag_layer_modules tags_modh.kg)" = 2 ]
	[ "$(tasks tags_modh.kg '.ly == 1 and .ph == "fwd"' '\(.n)' | sort -u | tr '\n' ' ')" = "aten::layer_norm aten::linear aten::relu " ]
}

@test "kineto2graph: --layer-ops finds layers among the ops it matches; a bad expression is a usage error" {
	# Among layer_norm and linear the unit (layer_norm, linear) repeats
	# twice a step; gelu goes with the layer before it, and the last
	# layer takes as many ops after its last match as the one before
	# (relu): the layers the module calls give in the test above.
	jq -c '{traceEvents: [.traceEvents[] | select(.cat != "python_function")]}' \
	    "$RULES/tags_module.json" > nomod.json
	run -0 --separate-stderr kineto2graph --layer-ops 'layer_norm|linear' -o re.kg nomod.json
	run -0 tasks re.kg '.ph == "fwd" and .mb == 0' '\(.n) \(.ly // "-")'
	[ "$(echo "$output" | tr '\n' ';')" = "aten::to -;aten::layer_norm 0;aten::linear 0;aten::gelu 0;aten::layer_norm 1;aten::linear 1;aten::relu 1;aten::loss -;" ]
	[ "$(cov tag_layer_unit_ops re.kg)" = 2 ]
	run -2 --separate-stderr kineto2graph --layer-ops '(' nomod.json
	[ "${stderr_lines[0]%%:*}" = kineto2graph ]
	case "${stderr_lines[0]}" in "kineto2graph: invalid --layer-ops '(': "*) ;; *) false ;; esac
}

@test "kineto2graph: the H100 GPT traces' layers are the model's, found as a repeated block; a compiled model shows none" {
	# ../shared/gpu/traces: no record_function range names a layer; each
	# .meta.json gives the model's layer count and the profiler recorded
	# three steps of one micro-batch (active=3 in record.py).
	need_gpu
	for n in 4 8 16; do
		kineto2graph -q -o "l$n.kg" "$GPU/gpt_L${n}_H1024.json.gz"
		[ "$(jq .layers "$GPU/gpt_L${n}_H1024.meta.json")" = "$n" ]
		[ "$(cov tag_layer_repeats "l$n.kg")" = "$n" ]
		[ "$(cov tag_layer_steps "l$n.kg")" = 3 ]
		[ "$(tasks "l$n.kg" '.ly != null' '\(.ly)' | sort -un | tr '\n' ' ')" = "$(seq -s ' ' 0 $((n - 1))) " ]
	done
	# among a block's layer norms, linears and attention: the model's blocks
	kineto2graph -q --layer-ops 'layer_norm|linear|scaled_dot_product' -o r4.kg "$GPU/gpt_L4_H1024.json.gz"
	[ "$(cov tag_layer_repeats r4.kg)" = 4 ]
	# torch.compile: the forward is a compiled graph's few calls, no block
	kineto2graph -q -o c.kg "$GPU/gpt_L8_H1024_compile.json.gz"
	[ "$(cov tag_layer_steps c.kg)" = 0 ]
	[ "$(cov tag_layer_norepeat c.kg)" = 3 ]
	run -1 --separate-stderr graph-scale-layers 16 c.kg
	[ "$stderr" = 'graph-scale-layers: c.kg: section 0: no task has a layer tag: kineto2graph found no repeated block in the forward pass; name the layers with record_function ranges ("layer_3"), record nn.Module calls (with_stack=True) or give kineto2graph --layer-ops REGEX' ]
	run -1 --separate-stderr graph-scale-pp 2 c.kg
	[ "${stderr_lines[0]}" = 'graph-scale-pp: c.kg: section 0: the job has pipeline depth 1 (no send or receive between ranks), and rank 0 has no task with a layer tag to cut stages by: kineto2graph found no repeated block in the forward pass; name the layers with record_function ranges ("layer_3"), record nn.Module calls (with_stack=True) or give kineto2graph --layer-ops REGEX' ]
}

@test "kineto2graph: without ranges, a tracegen job's tasks get the micro-batch and layer its ranges give, and the stage of its layout" {
	# tiny: tp 2, pp 2, dp 2 (ranks 0-3 stage 0, 4-7 stage 1), 4 layers,
	# 4 micro-batches, 1F1B; and with one stage, GPipe (forward steps and
	# backward calls back to back, with nothing between them)
	for v in "0,4:" "0:--pp 1 --schedule gpipe"; do
		# shellcheck disable=SC2086
		tracegen --preset tiny --jobs 1 --ranks "${v%%:*}" ${v#*:} -d with
		# shellcheck disable=SC2086
		tracegen --preset tiny --jobs 1 --ranks "${v%%:*}" ${v#*:} --no-annotations -d without
		ranks=${v%%:*}
		for r in ${ranks//,/ }; do
			kineto2graph -o w.kg with/rank-$r.json.gz
			kineto2graph -o n.kg without/rank-$r.json.gz
			tag_lines w.kg >w.txt
			tag_lines n.kg >n.txt
			diff -u w.txt n.txt
			# every task has the stage of its rank; and the forward and
			# backward tasks of the 4 layers' micro-batches have
			# their layer and micro-batch
			want=$((r / 4))
			[ "$(awk '$6 != '$want w.txt | wc -l)" = 0 ]
			[ "$(cov tag_mb_inferred n.kg)" -gt 1000 ]
			[ "$(cov tag_layer_inferred n.kg)" -gt 1000 ]
			[ "$(cov tag_mb_unmatched n.kg)" = 0 ]
		done
		rm -rf with without
	done
}

@test "kineto2graph: --iteration keeps one ProfilerStep's tasks and refuses a step the trace lacks" {
	# Every step: aten::setup (900 µs) lies outside both steps and is
	# dropped; the rest gives 6 tasks, steps listed ascending though the
	# file holds #2 first.
	k2g iterations
	check_edges iterations
	header iterations.kg | grep -q '"iters":\[1,2\],'
	run -0 tasks iterations.kg 'true' '\(.n) \(.it)'
	[ "$output" = "cudaLaunchKernel 1
aten::op_it1 1
kern_it1 1
aten::op_it2 2
cudaLaunchKernel 2
kern_it2 2" ]
	[ "$(cov outside_iter iterations.kg)" = 1 ]

	# Step 1: its launch, its op, and kern_it1, which starts in step 2's
	# time (1105 µs) but takes its launch's iteration.
	run -0 --separate-stderr kineto2graph --iteration 1 -o it1.kg "$RULES/iterations.json"
	[ "$stderr" = "" ]
	header it1.kg | grep -q '"iters":\[1\],'
	run -0 tasks it1.kg 'true' '\(.n) \(.it)'
	[ "$output" = "cudaLaunchKernel 1
aten::op_it1 1
kern_it1 1" ]
	run -0 sorted_edges it1.kg
	[ "$output" = "cudaLaunchKernel -> aten::op_it1 thread trace
cudaLaunchKernel -> kern_it1 launch trace" ]
	# Dropped: aten::setup, and step 2's op, launch and kernel.
	[ "$(cov outside_iter it1.kg)" = 4 ]

	# Step 2: times count from its first task, aten::op_it2 (1110 µs).
	run -0 --separate-stderr kineto2graph --iteration 2 -o it2.kg "$RULES/iterations.json"
	[ "$stderr" = "" ]
	header it2.kg | grep -q '"iters":\[2\],'
	header it2.kg | grep -q '"tbase":1110000,'
	run -0 tasks it2.kg 'true' '\(.n) \(.it) \(.ts)'
	[ "$output" = "aten::op_it2 2 0
cudaLaunchKernel 2 15000
kern_it2 2 30000" ]

	run -1 --separate-stderr kineto2graph --iteration 99 -o it99.kg "$RULES/iterations.json"
	[ "$output" = "" ]
	[ "$stderr" = "kineto2graph: $RULES/iterations.json: no iteration 99 (the trace has 1, 2)" ]
	# No stream left behind, not even the temporary one.
	[ "$(ls -d it99.kg* 2>/dev/null)" = "" ]
}

@test "kineto2graph: NCCL kernels of all three name generations become coll tasks, with the metadata's size and group" {
	k2g nccl
	check_edges nccl

	# Without metadata the name gives the collective; by and gs keep
	# their defaults (0, -1). With it: 1024 Float elements = 4096 bytes,
	# group of 2, process group "0" of ranks "[0, 1]".
	run -0 tasks nccl.kg '.k == "coll" or .k == "kern"' '\(.k) \(.coll // "-") \(.by // 0) \(.gs // -1) \(.dt // "-") \(.pg // "-") \(.pgr // "-") \(.corr)'
	[ "$output" = "coll allreduce 0 -1 - - - 101
kern - 0 -1 - - - 105
coll sendrecv 0 -1 - - - 102
coll allgather 0 -1 - - - 103
coll allreduce 4096 2 Float 0 [0, 1] 104" ]
	[ "$(cov tasks_coll nccl.kg)" = 4 ]
	[ "$(cov tasks_kern nccl.kg)" = 1 ]
	[ "$(cov coll_recognised nccl.kg)" = 4 ]
	[ "$(cov coll_meta nccl.kg)" = 1 ]
	[ "$(cov coll_bytes nccl.kg)" = 1 ]
}

@test "kineto2graph: communication kernels beyond NCCL's (DeepEP, multimem, custom all-reduce, ncclSymk) become coll tasks, by common/commkern.c's table" {
	k2g commkern

	# One line per kernel of the fixture, in launch order: the table's
	# families (DeepEP dispatch/combine/notify as all-to-all, NVLS and
	# symmetric-memory all-reduce/all-gather, vLLM and TensorRT-LLM
	# custom all-reduce, NCCL's symmetric and SendRecv kernels); then
	# names that only look like them stay compute: DeepEP's layout kernel
	# (in its layout and, in some forks, internode namespace), a dispatch
	# outside DeepEP's namespaces, a compute kernel named all_reduce.
	run -0 tasks commkern.kg '.k == "coll" or .k == "kern"' '\(.k) \(.coll // "-") \(.corr)'
	[ "$output" = "coll alltoall 201
coll alltoall 202
coll alltoall 203
coll alltoall 204
coll alltoall 205
coll allreduce 206
coll allgather 207
coll allreduce 208
coll allreduce 209
coll allreduce 210
coll allreduce 211
coll sendrecv 212
kern - 213
kern - 214
kern - 215
kern - 216" ]
	[ "$(cov coll_recognised commkern.kg)" = 12 ]
}

@test "kineto2graph: a collective that names its process group only gets the ranks from distributedInfo's pg_config" {
	k2g pgconfig
	# group "0" is ranks 0-3 and "1" ranks 0 and 2 in pg_config; "7" is
	# in no table: no ranks; the last carries its own ranks
	run -0 tasks pgconfig.kg '.k == "coll"' '\(.corr) \(.pg) \(.pgr // "-")'
	[ "$output" = "101 0 [0, 1, 2, 3]
102 1 [0, 2]
103 7 -
104 1 [0, 2]" ]
}

@test "graphstat: the kernels of the communication table count as exposed communication" {
	kineto2graph -o commkern.kg "$RULES/commkern.json"
	# 12 communication kernels of 40 us each, one every 50 us, none
	# overlapping another kernel: 0.480 ms exposed communication; the 4
	# compute kernels: 0.160 ms.
	run -0 --separate-stderr graphstat --csv commkern.kg
	[ "$(echo "$output" | sed -n 2p | cut -d, -f10-12)" = "160000,0,480000" ]
}

@test "kineto2graph: a PyTorch 1.8 trace (Operator, Runtime, Kernel, \"stream 7\" tids) gives the same kind of graph" {
	k2g legacy
	check_edges legacy

	# ProfilerStep#3 is filed as an Operator there: a step, not a task.
	header legacy.kg | grep -q '"rank":-1,'
	header legacy.kg | grep -q '"iters":\[3\],'
	run -0 tasks legacy.kg 'true' '\(.k) \(.n) \(.it)'
	[ "$output" = "rt cudaMemsetAsync 3
set Memset (Device) 3
rt cudaLaunchKernel 3
kern legacy_conv_kernel 3
cpu aten::relu_ 3
rt cudaStreamSynchronize 3" ]

	# The memset's size, and its op's "Input dims" (lower-case d there).
	run -0 tasks legacy.kg '.k == "set"' '\(.by) \(.op) \(.sh)'
	[ "$output" = "512 aten::zero_ [[64]]" ]

	# Synchronize 1075-1085 µs after legacy_conv_kernel ends at 1080 µs.
	run -0 tasks legacy.kg '.n == "cudaStreamSynchronize"' '\(.d) \(.od)'
	[ "$output" = "5000 10000" ]

	# The numeric string tid is the thread id; "stream 7" is stream 7.
	run -0 sh -c "graphcat -r legacy.kg | jq -c 'select(.r == \"proc\") | [.k, .pid, .tid, .main // false]'"
	[ "$output" = '["thread",200,1890023232,true]
["stream",0,7,false]' ]

	# The four flow events (cat async) are skipped, and counted.
	[ "$(cov skip:async legacy.kg)" = 4 ]
}

@test "kineto2graph: float µs timestamps relative to baseTimeNanoseconds become exact integer ns" {
	k2g float_ts
	check_edges float_ts

	# tbase = 1700000000000000000 + 1000.5 µs (the first task).
	header float_ts.kg | grep -q '"tbase":1700000000001000500,'
	header float_ts.kg | grep -q '"rank":1,"world":2,'
	header float_ts.kg | grep -q '"iters":\[5\],'

	# ts: 1000.5, 1012.125, 1020.333 and 1030.0015 µs (rounded half up
	# to 1030002 ns) less 1000500 ns; d: 10.25, 3.5, 4 and 2.0004 µs.
	run -0 tasks float_ts.kg 'true' '\(.n) \(.ts) \(.d)'
	[ "$output" = "aten::float_a 0 10250
cudaLaunchKernel 11625 3500
kern_float 19833 4000
aten::float_b 29502 2000" ]

	# 1012.125 - (1000.5 + 10.25) µs and 1030.002 - (1012.125 + 3.5) µs.
	run -0 edge_info float_ts.kg thread
	[ "$output" = "aten::float_a -> cudaLaunchKernel#301 dl=1375 on=- via=- at=-
cudaLaunchKernel#301 -> aten::float_b dl=14377 on=- via=- at=-" ]
}

@test "kineto2graph: rule 8, each GPU allocator event goes with the task its thread ran last, which keeps the most allocated and reserved and the net bytes" {
	# memory.json: [memory] events with the allocator's totals after each.
	# At 1002, before the thread's first task (aten::a at 1010): given to
	# none. aten::a (1010-1030): +100 (1100), +2000 (3100, reserved
	# 8192), -2000 (1100): most 3100, net 100, reserved 8192; a host
	# event (Device Type 0) at 1018 is skipped. At 1065, after aten::b
	# (1040-1060) ended and before aten::c: aten::b's, +500 (1600).
	# aten::c: -600 (1000): most 1000, net -600.
	k2g memory
	run -0 tasks memory.kg 'true' '\(.n) \(.ma // "-") \(.mn // "-") \(.mr // "-") \(.mx // "-")'
	# mx, the excursion above the level before the task's first event:
	# aten::a 3100 - (1100 - 100) = 2100, aten::b 1600 - 1100 = 500,
	# aten::c 1000 below 1600: 0
	[ "$output" = "aten::a 3100 100 8192 2100
aten::b 1600 500 8192 500
aten::c 1000 -600 8192 0" ]
	[ "$(cov mem_events memory.kg)" = 5 ]
	[ "$(cov mem_unattached memory.kg)" = 1 ]
	[ "$(cov skip:cpu_instant_event memory.kg)" = 1 ]
	# a trace without allocator events: no task carries any
	k2g thread
	[ "$(tasks thread.kg '.ma != null or .mn != null or .mr != null' '\(.n)')" = "" ]
}

@test "kineto2graph: rule 8, an allocator event on a thread that runs no task goes with the task started last on any thread, and each task keeps its excursion" {
	# memory_threads.json: aten::a (1010-1030) +100 (1100), +2000 (3100),
	# -2000 (1100): the level before its first event is 1100 - 100 =
	# 1000, its most 3100: excursion 2100. aten::b +500 (1600): 500.
	# At 1110 thread 100 runs nothing (aten::b ended at 1060) while
	# aten::c (thread 200, 1100-1120) runs: -300 goes with aten::c, as
	# does +50 at 1115 on its own thread: net -250, most 1350, below the
	# 1600 before it: excursion 0. aten::d -350 (1000).
	k2g memory_threads
	run -0 tasks memory_threads.kg '.ma != null' '\(.n) \(.ma) \(.mn) \(.mx)'
	[ "$output" = "aten::a 3100 100 2100
aten::b 1600 500 500
aten::c 1350 -250 0
aten::d 1000 -350 0" ]
	[ "$(cov mem_events memory_threads.kg)" = 7 ]
	[ "$(cov mem_unattached memory_threads.kg)" = 0 ]
}

@test "kineto2graph: on the H100 traces recorded with profile_memory, the most allocated and reserved its tasks keep are the peaks torch.cuda measured" {
	# ../shared/gpu/traces/*_mem: peak_allocated_bytes and
	# peak_reserved_bytes in the .meta.json are torch.cuda's over the
	# unprofiled steps; the traced steps reach the same peaks (within 1%).
	need_gpu
	n=0
	for f in "$GPU"/*_mem.json.gz; do
		m=${f%.json.gz}.meta.json
		kineto2graph -q -o t.kg "$f"
		graphcat t.kg | jq -s --slurpfile m "$m" -e '
			[.[] | select(.r == "task" and .ma != null)] as $t |
			($t | map(.ma) | max) as $a | ($t | map(.mr) | max) as $r |
			(($a - $m[0].peak_allocated_bytes) | fabs) <= 0.01 * $m[0].peak_allocated_bytes and
			(($r - $m[0].peak_reserved_bytes) | fabs) <= 0.01 * $m[0].peak_reserved_bytes'
		n=$((n + 1))
	done
	[ "$n" -ge 5 ]
}

@test "kineto2graph rules: calls sharing a correlation id are counted, warned of, and paired with their kernels by time" {
	# two launch calls with correlation 5 and two kernels with it: once
	# both kernels got a launch edge from the first call, silently (HTA
	# multiplies rows here); see dup_corr.edges for the pairing
	run -0 --separate-stderr kineto2graph -o dup_corr.kg "$RULES/dup_corr.json"
	[ "$stderr" = "kineto2graph: warning: $RULES/dup_corr.json: 1 runtime calls reuse an earlier call's correlation id (GPU tasks paired with them by time)" ]
	check_edges dup_corr
	# one call reuses an id; both kernels joined, none left over
	[ "$(cov launch_dupcorr dup_corr.kg)" = 1 ]
	[ "$(cov launch_joined dup_corr.kg)" = 2 ]
	[ "$(cov launch_nogpu dup_corr.kg)" = 0 ]
	run -0 --separate-stderr kineto2graph -q -o dup_corr.kg "$RULES/dup_corr.json"
	[ "$stderr" = "" ]
}

@test "kineto2graph: tasks are numbered and written the host's first, then the GPU's computation, then its collectives, each in time order" {
	# so that a filter changing one kind passes the others' frames on
	# as they came (graph-retime, graph-scale-dp); on a real DDP trace
	# with all three kinds
	need_traces
	kineto2graph -q -o ddp.kg "$TRACES"/hta_ddp_2rank_a100_nccl_meta/nccl_data.json.gz
	graphcat -r ddp.kg | jq -s -e '
		[.[] | select(.r == "task")] as $t |
		($t | map(.id)) == [range($t | length)] and
		($t | map(if .k == "cpu" or .k == "rt" then 0 elif .k == "coll" then 2 else 1 end)) as $g |
		($g | index(1)) != null and ($g | index(2)) != null and $g == ($g | sort) and
		([range($t | length - 1) | select($g[.] == $g[. + 1] and $t[.].ts > $t[. + 1].ts)] | length) == 0'
}

@test "kineto2graph: ROCm's string numbers, hex handles and hip calls give the edges of their CUDA twins" {
	k2g rocm
	check_edges rocm

	# The header from deviceProperties and distributedInfo ("rank": "0").
	run -0 header rocm.kg
	[[ "$output" == *'"rank":0,"world":1,'* ]]
	[[ "$output" == *'"gpu":"AMD Instinct MI300X","gpu_mem":206141652992,"gpu_sms":304,'* ]]
	# The copy's bytes, the string "4096".
	run -0 tasks rocm.kg '.k == "cpy"' '\(.by)'
	[ "$output" = 4096 ]
	# hipMemcpyWithStream runs 1045-1095 µs, its copy 1060-1070 after
	# k_add (ends 1055): the call keeps 1060-1055 = 5 µs; the stream
	# synchronize (1110-1140) 1140-1136 = 4 µs after k_tail; the device
	# synchronize (1142-1150) all 8 µs, k_tail having ended at 1136.
	run -0 tasks rocm.kg '.k == "rt" and (.od // 0) > 0' '\(.n) \(.d) \(.od)'
	[ "$output" = "hipMemcpyWithStream 5000 50000
hipStreamSynchronize 4000 30000" ]
	run -0 tasks rocm.kg '.n == "hipDeviceSynchronize"' '\(.d)'
	[ "$output" = 8000 ]
	[ "$(cov copy_blocking rocm.kg)" = 1 ]
	[ "$(cov sync_bound rocm.kg)" = 2 ]
	[ "$(cov wait_inferred rocm.kg)" = 1 ]
	[ "$(cov missing:correlation rocm.kg)" = 0 ]

	# One table, not two code paths: the same trace with each call's
	# CUDA twin gives the same graph, names aside.
	sed -e 's/hipExtModuleLaunchKernel\|hipModuleLaunchKernel\|hipLaunchKernel/cudaLaunchKernel/' \
	    -e 's/hipEventRecord/cudaEventRecord/; s/hipStreamWaitEvent/cudaStreamWaitEvent/' \
	    -e 's/hipMemcpyWithStream/cudaMemcpy/; s/hipStreamSynchronize/cudaStreamSynchronize/' \
	    -e 's/hipDeviceSynchronize/cudaDeviceSynchronize/' "$RULES/rocm.json" >cuda.json
	run -0 kineto2graph -q -o cuda.kg cuda.json
	graphcat rocm.kg | jq -c 'select(.r != "str" and .r != "header" and .r != "end") | del(.n)' >rocm.lines
	graphcat cuda.kg | jq -c 'select(.r != "str" and .r != "header" and .r != "end") | del(.n)' >cuda.lines
	# 3 procs, 15 tasks, the 22 edges of rocm.edges and the coverage
	[ "$(wc -l <rocm.lines)" = 41 ]
	diff rocm.lines cuda.lines
}

@test "kineto2graph: a ROCm number that is not one is refused with the byte and the field" {
	printf '{"traceEvents": [{"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": {"correlation": 5, "stream": "0xfg"}}]}' >bad.json
	# the byte after the value, as for every JSON error: "0xfg" is
	# bytes 155-160
	run -1 --separate-stderr kineto2graph -o out.kg bad.json
	[ "$stderr" = "kineto2graph: bad.json: byte 161: field args.stream: expected an integer" ]
	[ ! -e out.kg ]
	sed 's/"0xfg"/"4096 "/' bad.json >bad2.json
	run -1 --separate-stderr kineto2graph -o out.kg bad2.json
	[ "$stderr" = "kineto2graph: bad2.json: byte 162: field args.stream: expected an integer" ]
	sed 's/"0xfg"/"0x8000000000000000"/' bad.json >big.json
	run -1 --separate-stderr kineto2graph -o out.kg big.json
	[[ "$stderr" == *"field args.stream: expected an integer" ]]
	sed 's/"ts": 1,/"ts": "1.5e0x",/' bad.json | sed 's/"0xfg"/"0x0"/' >badts.json
	run -1 --separate-stderr kineto2graph -o out.kg badts.json
	[[ "$stderr" == *"field ts: expected a number" ]]
	# a time in a string is a time
	sed 's/"ts": 1,/"ts": "1.5",/' bad.json | sed 's/"0xfg"/"0x0"/' >okts.json
	run -0 kineto2graph -q -o ok.kg okts.json
	run -0 tasks ok.kg 'true' '\(.n) \(.d)'
	[ "$output" = "hipLaunchKernel 2000" ]
}

@test "kineto2graph: a graph launch's kernels each depend on it, and launches captured into a graph run nothing" {
	k2g graph_launch
	check_edges graph_launch

	# gl marks the graph launch's three edges, and no other.
	graphcat -r graph_launch.kg | jq -r 'select(.r == "edge" and .gl) | "\(.src)->\(.dst)"' | sort >gl
	[ "$(wc -l <gl)" = 3 ]
	graphcat -r graph_launch.kg | jq -r 'select(.r == "task" and .n == "hipGraphLaunch") | .id' >gid
	[ "$(cut -d- -f1 gl | sort -u)" = "$(cat gid)" ]
	[ "$(cov launch_graph graph_launch.kg)" = 3 ]
	# The two launches between hipStreamBeginCapture and
	# hipStreamEndCapture were captured, not run; the last launch
	# (correlation 307) ran nothing the trace shows.
	[ "$(cov launch_captured graph_launch.kg)" = 2 ]
	[ "$(cov launch_nogpu graph_launch.kg)" = 1 ]
	# A replay: the graph's kernels start 5 and 8 µs after the call
	# ends (1050), as traced.
	run -0 graphsim -o sim.kg graph_launch.kg
	run -0 graphstat sim.kg
	[[ "$output" == *"+0.00 |"* ]]
}

@test "kineto2graph: recomputation, by hand: a run of layer ops inside an autograd node, a CheckpointFunctionBackward node's own children, a lone attention forward; not a forward op or two a node calls" {
	# tags_infer.json (its layers: layer_norm, linear, gelu, twice a
	# step; layer 3's nodes carry sequence numbers 15-13 in micro-batch
	# 0, 22-20 in 1), its autograd thread's nodes wrapped in the engine's
	# evaluate_function ranges, and in them:
	# - layer 3's GeluBackward0 (mb 0) runs aten::layer_norm, aten::linear
	#   and aten::gelu first: 3 ops named as the forward layers' top-level
	#   ops in a row (MIN_LAYER_OPS), torch.utils.checkpoint's unpack
	#   hook: recomputed, 3 tasks, one run;
	# - its LinearBackward0 calls aten::linear and aten::mm: one layer op,
	#   then one that is none: a run of 1, not recomputed;
	# - its NativeLayerNormBackward0 renamed CheckpointFunctionBackward
	#   (the reentrant checkpoint's node) runs aten::mul and then a nested
	#   node: aten::mul recomputed (one run), the nested node's op not;
	# - layer 3's GeluBackward0 in mb 1 calls
	#   aten::scaled_dot_product_attention alone: a forward attention,
	#   selective recomputation, one run.
	# 5 tasks tagged rc, 3 runs; all in the backward, in their layer.
	# The autograd thread's tasks, in time order:
	jq '
	def op($n; $ts; $d): {"ph": "X", "cat": "cpu_op", "name": $n, "pid": 100, "tid": 50,
	    "ts": $ts, "dur": $d, "args": {}};
	def ev($n; $ts; $d): op("autograd::engine::evaluate_function: " + $n; $ts; $d);
	.traceEvents |= (map(if .tid == 50 and .ts == 1160 then
	    .name = "CheckpointFunctionBackward" | .dur = 9 else . end) + [
	  ev("GeluBackward0"; 1139.5; 9), op("aten::layer_norm"; 1141; 1),
	  op("aten::linear"; 1143; 1), op("aten::gelu"; 1145; 1),
	  ev("LinearBackward0"; 1149; 9.5), op("aten::linear"; 1151; 1), op("aten::mm"; 1153; 1),
	  ev("CheckpointFunctionBackward"; 1159.5; 10), op("aten::mul"; 1161; 1),
	  ev("NativeLayerNormBackward0"; 1163; 5), op("NativeLayerNormBackward0"; 1163.5; 4),
	  ev("GeluBackward0"; 1349.5; 9), op("aten::scaled_dot_product_attention"; 1351; 2)])' \
	    "$RULES/tags_infer.json" > rc.json
	run -0 --separate-stderr kineto2graph -o rc.kg rc.json
	[ "$stderr" = "" ]
	run -0 tasks rc.kg '.p != 0' '\(.n) \(.ph) \(.mb) \(.ly // "-") \(.rc // false)'
	[ "$output" = "LossBackward0 bwd 0 - false
aten::layer_norm bwd 0 3 true
aten::linear bwd 0 3 true
aten::gelu bwd 0 3 true
aten::linear bwd 0 3 false
aten::mm bwd 0 3 false
aten::mul bwd 0 3 true
NativeLayerNormBackward0 bwd 0 3 false
torch::autograd::AccumulateGrad bwd 0 3 false
GeluBackward0 bwd 0 2 false
LinearBackward0 bwd 0 2 false
NativeLayerNormBackward0 bwd 0 2 false
torch::autograd::AccumulateGrad bwd 0 2 false
LossBackward0 bwd 1 - false
aten::scaled_dot_product_attention bwd 1 3 true
LinearBackward0 bwd 1 3 false
NativeLayerNormBackward0 bwd 1 3 false
torch::autograd::AccumulateGrad bwd 1 3 false
GeluBackward0 bwd 1 2 false
cudaLaunchKernel bwd 1 2 false
NativeLayerNormBackward0 bwd 1 2 false
gemm_bwd bwd 1 2 false
torch::autograd::AccumulateGrad bwd 1 2 false" ]
	[ "$(cov tag_recompute rc.kg)" = 5 ]
	[ "$(cov tag_recompute_runs rc.kg)" = 3 ]
	# the trace as it was: nothing recomputed
	kineto2graph -q -o plain.kg "$RULES/tags_infer.json"
	[ "$(cov tag_recompute_runs plain.kg)" = 0 ]
	# graph-recompute none takes the 5 out
	graph-recompute none rc.kg > none.kg
	[ "$(graphcat none.kg | jq -s '[.[] | select(.r == "task")] | length')" = \
	  "$(( $(graphcat rc.kg | jq -s '[.[] | select(.r == "task")] | length') - 5 ))" ]
}
