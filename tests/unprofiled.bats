#!/usr/bin/env bats
# The step without the profiler (kineto2graph(1), UNPROFILED STEP):
# the profiler's cost each host task carries (pc), calibrated by the
# step time given or estimated, simulated away by graphsim and reported
# by graphstat.

load helpers

HB="$FIX/prof/hostbound.json"

# hostbound.json: a launch (20 us, its kernel 500 us) then nine ops of
# 20 us every 100 us, the fifth an op around another (two events), all
# on one thread: traced 920 us. At 30 us an event each task loses 30
# (the nested one 60), taken off the gap before it (80 or 85 us), the
# launch, which has no gap, its 20: 920 - 20 - 8 * 30 - 60 = 600 us.

csv_col() { # the named column of graphstat --csv's first row
	graphsim "$1" | graphstat --csv | awk -F, -v c="$2" '
		NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next }
		NR == 2 { print $k }'
}

@test "unprofiled: --step-time finds the cost worked out by hand, and graphstat gives both steps" {
	# Between 20 and 42.5 us an event the step is 900 - 10 c us (the
	# launch has lost its 20, eight ops c each, the nested one 2 c). The
	# fit weighs the step's miss in units of 1% (6 us) against ln(c /
	# 3.2) / ln 2: at c = 30 us the second's slope, 2 ln(9.375) /
	# (30 ln(2)^2) = 0.31 a us, against the first's curvature, 2 * 10^2
	# / 6^2 = 5.6 a us^2, moves it 0.06 us down: 29.94 us.
	kineto2graph --step-time 0.6 "$HB" > c.kg
	dump c.kg | head -1 | jq -e '.pcal == "calibrated" and .ustep == 600000 and
	    .pcost >= 29900 and .pcost <= 29990' > /dev/null
	c=$(dump c.kg | jq 'select(.r == "header") | .pcost')
	# each task's cost: one event each, the nested op's two
	[ "$(dump c.kg | jq -r 'select(.r == "task" and .pc) | "\(.n) \(.pc)"' | sort | uniq -c | sed 's/^ *//')" = \
		"1 aten::inner $((2 * c))
8 aten::x $c
1 cudaLaunchKernel $c" ]
	[ "$(csv_col c.kg simulated_ns)" = 920000 ]
	[ "$(csv_col c.kg unprofiled_ns)" = $((900000 - 10 * c)) ]
	[ "$(csv_col c.kg profiler_cost)" = calibrated ]
	graphsim c.kg | graphstat --json | jq -e --argjson u $((900000 - 10 * c)) \
	    '.unprofiled_ns == $u and .simulated_ns == 920000' > /dev/null
	graphsim c.kg | graphstat > text
	grep -q "without the profiler: simulated 0.601 ms (0.601 to 0.601), its cost calibrated to a step of 0.600 ms (29.9[0-9]* us a host event)" text
}

@test "unprofiled: a cost given is the calibrated one's; 0 records none; none given is the estimate" {
	kineto2graph --profiler-cost 30 "$HB" > g.kg
	[ "$(csv_col g.kg unprofiled_ns)" = 600000 ]
	[ "$(csv_col g.kg profiler_cost)" = given ]
	kineto2graph --profiler-cost 0 "$HB" > z.kg
	[ "$(dump z.kg | jq -c 'select(.r == "header") | [.pcal, .pcost]')" = '[null,null]' ]
	[ "$(dump z.kg | jq -s '[.[] | select(.r == "task" and .pc)] | length')" = 0 ]
	[ "$(csv_col z.kg unprofiled_ns)" = "" ]
	graphsim z.kg | graphcat | grep '"r":"sim"' > sim
	if grep -q ussd sim; then return 1; fi
	kineto2graph "$HB" > e.kg
	[ "$(dump e.kg | jq -c 'select(.r == "header") | [.pcal, .pcost]')" = '["estimated",3200]' ]
	# 920 - 3.2 * (10 + 1) = 884.8 us: every cost below a gap
	[ "$(csv_col e.kg unprofiled_ns)" = 884800 ]
	graphsim e.kg | graphstat | grep -q 'its cost estimated (3.200 us a host event: kineto2graph --step-time calibrates it)'
}

@test "unprofiled: a step time no cost can give is refused with the numbers" {
	run -1 --separate-stderr kineto2graph --step-time 0.95 "$HB"
	[ "$stderr" = "kineto2graph: $HB: --step-time 0.950 ms is longer than every traced step (0.920 to 0.920 ms, median 0.920): the profiler cannot have made the step shorter" ]
	run -1 --separate-stderr kineto2graph --step-time 0.45 "$HB"
	[[ "$stderr" == "kineto2graph: $HB: --step-time 0.450 ms is shorter than the trace can run without any host time the profiler recorded (0.505 ms"* ]]
	# the floor: the launch at 0, its kernel 5 us after (the gap the
	# trace shows, 1025 - 1020, is its launch edge's), 500 us long;
	# within 1% of it, the floor
	kineto2graph --step-time 0.5 "$HB" > f.kg
	[ "$(csv_col f.kg unprofiled_ns)" = 505000 ]
}

@test "unprofiled: step times by rank, and the usage errors" {
	kineto2graph --step-time 0.6 "$HB" > all.kg
	kineto2graph --rank 3 --step-time 3=0.6 "$HB" > r.kg
	# a rank's own step time calibrates as the one for every input
	[ "$(dump r.kg | jq -c 'select(.r == "header") | .pcost')" = "$(dump all.kg | jq -c 'select(.r == "header") | .pcost')" ]
	run -1 --separate-stderr kineto2graph --rank 3 --step-time 1=0.6,2=0.7 "$HB"
	[ "$stderr" = "kineto2graph: $HB: --step-time gives no step time for rank 3" ]
	run -1 --separate-stderr kineto2graph --step-time 0=0.6 "$HB"
	[[ "$stderr" == *"--step-time gives step times by rank, and the trace records none (--rank R names it)" ]]
	for bad in abc 0.6,1=0.7 1=0.6,1=0.7 -1 0 1=; do
		run -2 kineto2graph --step-time "$bad" "$HB"
		[[ "${lines[0]}" == "kineto2graph: invalid --step-time '$bad'"* ]]
	done
	run -2 kineto2graph --profiler-cost x "$HB"
	[[ "${lines[0]}" == "kineto2graph: invalid --profiler-cost 'x'"* ]]
	run -2 kineto2graph --profiler-cost 3 --step-time 0.6 "$HB"
	[ "${lines[0]}" = "kineto2graph: --step-time and --profiler-cost exclude each other" ]
}

@test "unprofiled: every what-if tool keeps each task's cost, copies carry it, and the job simulates both ways" {
	tracegen --preset tiny --jobs 1 -d job
	kineto2graph -q --profiler-cost 5 job/*.json.gz | graph-deps --merge > job.kg
	dump job.kg | jq -r 'select(.r == "header") | .pcal' | grep -qx given
	n0=$(dump job.kg | jq -s '[.[] | select(.r == "task" and .pc)] | length')
	[ "$n0" -gt 1000 ]
	for t in "graph-scale-dp 4" "graph-scale-layers 8" "graph-scale-pp 4" "graph-scale-tp 4" \
	    "graph-scale-hidden 512" "graph-retime --speedup gemm=2" "graph-scale-pp 1 --microbatches 8"; do
		$t -q job.kg > w.kg
		n=$(dump w.kg | jq -s '[.[] | select(.r == "task" and .pc)] | length')
		[ "$n" -ge "$n0" ] || { echo "$t: $n tasks with a cost, $n0 before"; return 1; }
		graphsim w.kg | graphstat --csv | awk -F, -v t="$t" '
			NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
			$1 == "job" { rows++; if ($c["unprofiled_ns"] == "" || $c["unprofiled_ns"] + 0 >= $c["simulated_ns"] + 0 ||
			    $c["profiler_cost"] != "given") { print t ": " $0; bad = 1 } }
			END { exit bad || !rows }'
	done
	# a layer's copies carry their cost: twice the layers, about twice the layers' costs
	graph-scale-layers -q 8 job.kg > l8.kg
	sum() { dump "$1" | jq -s '[.[] | select(.r == "task" and .pc and .ly >= 0) | .pc] | add'; }
	a=$(sum job.kg) b=$(sum l8.kg)
	[ "$((b * 10 / a))" -ge 19 ] && [ "$((b * 10 / a))" -le 21 ]
}

@test "unprofiled: a job's header says how the ranks' costs were found" {
	kineto2graph --rank 0 --step-time 0.6 "$HB" > r0.kg
	kineto2graph --rank 1 --step-time 0.6 "$HB" > r1.kg
	graph-deps --merge r0.kg r1.kg | graphcat | head -1 | jq -e '.pcal == "calibrated" and .pcost >= 29900 and .pcost <= 29990 and .ustep == 600000'
	kineto2graph --rank 1 "$HB" > e1.kg
	graph-deps --merge r0.kg e1.kg | graphcat | head -1 | jq -e '.pcal == "estimated" and (has("pcost") | not) and (has("ustep") | not)'
}

@test "unprofiled: the reader refuses a negative cost and an unknown way of finding it" {
	kineto2graph --step-time 0.6 "$HB" | graphcat > c.jsonl
	sed 's/"pcal":"calibrated"/"pcal":"guessed"/' c.jsonl | "$ROOT/tests/tools/jsonl2kg" | zstd -q -c > bad.kg
	run -1 graphcat bad.kg
	[[ "$output" == *"field pcal"* ]]
	sed '0,/"pc":[0-9]*/s//"pc":-1/' c.jsonl | "$ROOT/tests/tools/jsonl2kg" | zstd -q -c > neg.kg
	run -1 graphsim neg.kg
	[[ "$output" == *"field pc: -1 ns is out of range"* ]]
}

@test "unprofiled: a trace without host tasks keeps its figures and says the step time does not apply" {
	run -0 --separate-stderr kineto2graph --step-time 0.2 "$FIX/prof/gpuonly.json"
	[[ "$stderr" == *"kineto2graph: warning: $FIX/prof/gpuonly.json: no host task: --step-time does not apply (the profiler's cost is on host tasks); the trace's figures are kept"* ]]
	kineto2graph -q --step-time 0.2 "$FIX/prof/gpuonly.json" > g.kg
	[ "$(dump g.kg | jq -c 'select(.r == "header") | [.pcal, .pcost, .ustep]')" = '[null,null,null]' ]
}

@test "unprofiled: a what-if against its base compares the steps without the profiler too" {
	kineto2graph --step-time 0.6 "$HB" | graphsim > base.kg
	# the kernel twice as slow: traced 920 -> 1025 us (its launch's 25
	# and its 1000); unprofiled 600.55 -> 1005 (the launch at 0, its 5 us
	# gap, then the kernel), GPU-bound now: +67.35%
	graph-retime -q --speedup 'kern_long=0.5' base.kg | graphsim | graphstat --base base.kg > text
	grep -q '^-     1              0.920      1.025   +11.41 | .* |      1.005$' text
	grep -q 'without the profiler: predicted 1.005 ms (1.005 to 1.005), its cost calibrated to a step of 0.600 ms (29.945 us a host event); base 0.601 ms (change +67.35%)' text
}

@test "unprofiled: a cost taken off a gap of more than 4.3 s (a long delay)" {
	# two ops 5 s apart: the second loses 30 us of the gap, the first,
	# with none before it, its 20 us: 5000020 - 50 us
	cat > long.json <<-'JSON'
	{"traceEvents": [
	{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000, "dur": 5000100},
	{"ph": "X", "cat": "cpu_op", "name": "aten::a", "pid": 1, "tid": 1, "ts": 1000, "dur": 20},
	{"ph": "X", "cat": "cpu_op", "name": "aten::b", "pid": 1, "tid": 1, "ts": 5001000, "dur": 20}]}
	JSON
	kineto2graph --profiler-cost 30 long.json > l.kg
	[ "$(csv_col l.kg simulated_ns)" = 5000020000 ]
	[ "$(csv_col l.kg unprofiled_ns)" = 4999970000 ]
}
