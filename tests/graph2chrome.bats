#!/usr/bin/env bats
# graph2chrome: the checklist; a hand-written job of two ranks whose
# events, times and flows are worked out below; shared traces through
# kineto2graph | graphsim | graph2chrome, checked with jq against the
# graph's own counts. The viewer test (speedscope in Chromium) is
# tests/viewer.bats.

load helpers

USAGE="usage: graph2chrome [-q] [--measured | --simulated | --both] [--ranks LIST] [--iterations LIST | all] [--args none | call | task] [-o FILE] [FILE ...]"

mkstream() { # JSON lines on stdin -> a graph stream on stdout
	"$ROOT/tests/tools/jsonl2kg" | zstd -q -c
}

# Two ranks (ns). Rank 0: a launch call 0-1000 on its main thread, then
# its all-reduce from 2000, which waits for rank 1 and ends at 7000
# measured (od 5000), 9000 simulated. Rank 1: its launch call at 4000
# measured (6000 simulated), its all-reduce from 5000 to 7000 measured,
# 7000 to 9000 simulated. Rank 1's member starts last in both views, so
# the wait arrow runs from rank 1's kernel to rank 0's, at 5 us measured
# and 7 us simulated.
mkjob() {
	mkstream <<-'EOF2'
	{"r":"header","format":"kgraph","major":1,"minor":3,"producer":"t","unit":"ns","rank":-1,"world":2,"ranks":[0,1],"clk":[0,0],"t0":[0,0],"tools":["kineto2graph 0.1","graph-deps 0.1","graphsim 0.1"],"iters":[3]}
	{"r":"str","id":0,"s":"cudaLaunchKernel"}
	{"r":"str","id":1,"s":"nccl \"ring\""}
	{"r":"str","id":2,"s":"0"}
	{"r":"proc","id":0,"k":"thread","pid":1,"tid":1,"main":true,"rank":0}
	{"r":"proc","id":1,"k":"stream","pid":0,"tid":7,"rank":0}
	{"r":"proc","id":2,"k":"thread","pid":2,"tid":2,"main":true,"rank":1}
	{"r":"proc","id":3,"k":"stream","pid":1,"tid":7,"rank":1}
	{"r":"task","id":0,"p":0,"k":"rt","n":0,"d":1000,"ts":0,"it":3,"corr":11,"ss":0,"se":1000}
	{"r":"task","id":1,"p":1,"k":"coll","n":1,"d":2000,"od":5000,"ts":2000,"it":3,"corr":11,"coll":"allreduce","by":1024,"pg":2,"gs":2,"ph":"bwd","mb":1,"ly":3,"st":0,"ss":2000,"se":9000}
	{"r":"task","id":2,"p":2,"k":"rt","n":0,"d":1000,"ts":4000,"it":3,"ss":6000,"se":7000}
	{"r":"task","id":3,"p":3,"k":"coll","n":1,"d":2000,"ts":5000,"it":-1,"ss":7000,"se":9000}
	{"r":"edge","src":0,"dst":1,"k":"launch"}
	{"r":"edge","src":2,"dst":3,"k":"launch"}
	{"r":"edge","src":1,"dst":3,"k":"rank"}
	{"r":"end","tasks":4,"edges":3,"procs":4,"strs":3}
	EOF2
}

# --- the checklist -----------------------------------------------------------

@test "graph2chrome: --help prints the usage on stdout and exits 0" {
	run -0 --separate-stderr graph2chrome --help
	[ "${lines[0]}" = "$USAGE" ]
	[ -z "$stderr" ]
}

@test "graph2chrome: --version names the tool" {
	run -0 graph2chrome --version
	[[ $output == "graph2chrome (kgraph) "* ]]
}

@test "graph2chrome: an unknown option is a usage error" {
	run -2 --separate-stderr graph2chrome --bogus
	[ -z "$output" ]
	[ "${stderr_lines[1]}" = "$USAGE" ]
}

@test "graph2chrome: two views at once are a usage error" {
	run -2 --separate-stderr graph2chrome --measured --simulated
	[ "${stderr_lines[0]}" = "graph2chrome: --measured, --simulated and --both exclude each other" ]
}

@test "graph2chrome: a missing file is named in the error" {
	run -1 --separate-stderr graph2chrome nosuch.kg
	[ -z "$output" ]
	[ "$stderr" = "graph2chrome: nosuch.kg: No such file or directory" ]
}

@test "graph2chrome: empty input and garbage are errors, and -o leaves no file" {
	run -1 --separate-stderr graph2chrome -o out.json < /dev/null
	[ "$stderr" = "graph2chrome: -: empty input, not a graph stream" ]
	[ ! -e out.json ]
	printf 'not zstd\n' > junk
	run -1 --separate-stderr graph2chrome -o out.json junk
	[ "$stderr" = "graph2chrome: junk: not a graph stream (no zstd frame)" ]
	[ ! -e out.json ]
	# nothing beside the input (bats keeps its stderr files here)
	[ -z "$(ls | grep -v -e '^junk$' -e '^separate-stderr-')" ]
}

@test "graph2chrome: a truncated stream is an error" {
	mkjob > job.kg
	head -c 60 job.kg > cut.kg
	run -1 --separate-stderr graph2chrome -o out.json cut.kg
	[ "$stderr" = "graph2chrome: cut.kg: truncated graph stream (ends inside a zstd frame)" ]
	[ ! -e out.json ]
}

@test "graph2chrome: a write error is an error" {
	mkjob > job.kg
	run -1 --separate-stderr bash -c 'graph2chrome "$1" > /dev/full' _ job.kg
	[[ $stderr == "graph2chrome: stdout: write error: "* ]]
}

@test "graph2chrome: a closed pipe prints nothing on stderr" {
	mkjob > job.kg
	graph2chrome job.kg | head -1 > /dev/null 2> err
	[ ! -s err ]
}

@test "graph2chrome: stdin gives the same as the file operand" {
	mkjob > job.kg
	graph2chrome job.kg > a.json
	graph2chrome < job.kg > b.json
	# the metadata names the input: "job.kg" or "-"
	[ "$(jq -c 'del(.otherData.sections[0].input)' a.json)" = "$(jq -c 'del(.otherData.sections[0].input)' b.json)" ]
	[ "$(jq -r '.otherData.sections[0].input' b.json)" = - ]
}

# --- the hand-made job ---------------------------------------------------------

@test "graph2chrome: each task is a complete event at its simulated times by default" {
	mkjob > job.kg
	run -0 --separate-stderr graph2chrome job.kg
	[ -z "$stderr" ]
	jq -e . <<< "$output" > /dev/null
	run -0 jq -c '[.traceEvents[] | select(.ph == "X") | [.pid, .tid, .ts, .dur, .name, .cat]]' <<< "$output"
	[ "$output" = '[[0,0,0,1,"cudaLaunchKernel","rt"],[0,1,2,7,"nccl \"ring\"","coll"],[1,2,6,1,"cudaLaunchKernel","rt"],[1,3,7,2,"nccl \"ring\"","coll"]]' ]
}

@test "graph2chrome: --measured writes the traced start and traced duration" {
	mkjob > job.kg
	run -0 graph2chrome --measured job.kg
	run -0 jq -c '[.traceEvents[] | select(.ph == "X") | [.pid, .ts, .dur]]' <<< "$output"
	# task 1: ts 2000, od 5000 ns; task 2: ts 4000; task 3: 5000 for 2000
	[ "$output" = '[[0,0,1],[0,2,5],[1,4,1],[1,5,2]]' ]
}

@test "graph2chrome: the times are exact to the nanosecond, as microseconds" {
	mkstream > one.kg <<-'EOF'
	{"r":"header","format":"kgraph","major":1,"minor":3,"producer":"t","unit":"ns","rank":5}
	{"r":"str","id":0,"s":"k"}
	{"r":"proc","id":0,"k":"stream","pid":0,"tid":7}
	{"r":"task","id":0,"p":0,"k":"kern","n":0,"d":1234567,"ts":-1001,"it":-1}
	{"r":"end","tasks":1,"edges":0,"procs":1,"strs":1}
	EOF
	run -0 graph2chrome one.kg
	grep -q '"ts":-1.001,"dur":1234.567,' <<< "$output"
	grep -q '"name":"rank 5 (measured)"' <<< "$output"
	grep -q '"name":"GPU 0 stream 7"' <<< "$output"
}

@test "graph2chrome: --both puts each rank's measured and simulated processes side by side" {
	mkjob > job.kg
	run -0 graph2chrome --both job.kg
	run -0 jq -r '.traceEvents[] | select(.name == "process_name") | "\(.pid) \(.args.name)"' <<< "$output"
	[ "$output" = "0 rank 0 (measured)
2 rank 1 (measured)
1 rank 0 (simulated)
3 rank 1 (simulated)" ]
}

@test "graph2chrome: an event is named by its task's name alone, with what the call is in its args" {
	mkjob > job.kg
	graph2chrome job.kg > t.json
	# rank 0's all-reduce (simulated 2000-9000 ns): the same for every
	# call alike, so a viewer keying frames on name and args adds them up
	[ "$(jq -c '.traceEvents[] | select(.ph == "X" and .pid == 0 and .tid == 1) | [.name, .args]' t.json)" = \
	    '["nccl \"ring\"",{"collective":"allreduce","bytes":1024,"group":"0","group_size":2,"phase":"bwd"}]' ]
	# a task with nothing more to say has no args at all (rank 1's
	# all-reduce, which names no collective, and the launch calls)
	[ "$(jq -c '[.traceEvents[] | select(.ph == "X" and .args == null) | .name]' t.json)" = \
	    '["cudaLaunchKernel","cudaLaunchKernel","nccl \"ring\""]' ]
	# --args none: no args at all
	[ "$(graph2chrome --args none job.kg | jq -c '[.traceEvents[] | select(.ph == "X") | .args]')" = '[null,null,null,null]' ]
	run -2 --separate-stderr graph2chrome --args some job.kg
	[ "${stderr_lines[0]}" = "graph2chrome: invalid --args 'some' (none, call or task)" ]
	# --args task: the task's ids and tags too
	graph2chrome --args task job.kg > a.json
	[ "$(jq -c '.traceEvents[] | select(.ph == "X" and .args.task == 1) | .args' a.json)" = \
	    '{"collective":"allreduce","bytes":1024,"group":"0","group_size":2,"phase":"bwd","task":1,"iteration":3,"d_ns":2000,"od_ns":5000,"micro_batch":1,"layer":3,"stage":0,"correlation":11}' ]
	[ "$(jq -c '.traceEvents[] | select(.ph == "X" and .args.task == 3) | .args' a.json)" = '{"task":3,"iteration":null,"d_ns":2000}' ]
}

@test "graph2chrome: a task of no length is an instant event, the others complete events" {
	mkstream > z.kg <<-'EOF'
	{"r":"header","format":"kgraph","major":1,"minor":3,"producer":"t","unit":"ns","rank":0,"iters":[1]}
	{"r":"str","id":0,"s":"aten::mm"}
	{"r":"str","id":1,"s":"cudaPeekAtLastError"}
	{"r":"proc","id":0,"k":"thread","pid":1,"tid":1,"main":true}
	{"r":"task","id":0,"p":0,"k":"cpu","n":0,"d":1000,"ts":0,"it":1}
	{"r":"task","id":1,"p":0,"k":"rt","n":1,"d":0,"ts":1000,"it":1}
	{"r":"task","id":2,"p":0,"k":"cpu","n":0,"d":2000,"ts":1000,"it":1}
	{"r":"end","tasks":3,"edges":0,"procs":1,"strs":2}
	EOF
	run -0 jq -c '[.traceEvents[] | select(.ph == "X" or .ph == "i") | [.ph, .name, .ts, .dur, .s]]' <<< "$(graph2chrome z.kg)"
	[ "$output" = '[["X","aten::mm",0,1,null],["i","cudaPeekAtLastError",1,null,"t"],["X","aten::mm",1,2,null]]' ]
}

@test "graph2chrome: --ranks and --iterations write those ranks' and iterations' tasks, and their arrows" {
	mkjob > job.kg
	graph2chrome --ranks 1 job.kg > r1.json
	# rank 1's launch call and all-reduce, its launch arrow, no wait
	# arrow (its other end is rank 0's); processes of rank 1 alone (the
	# first pid, 0)
	[ "$(jq -c '[.traceEvents[] | select(.ph == "X") | [.pid, .ts]]' r1.json)" = '[[0,6],[0,7]]' ]
	[ "$(jq -c '[.traceEvents[] | select(.ph == "s" or .ph == "f") | .cat]' r1.json)" = '["launch","launch"]' ]
	[ "$(jq -c '[.traceEvents[] | select(.name == "process_name") | .args.name]' r1.json)" = '["rank 1 (simulated)"]' ]
	[ "$(jq -c '.otherData.sections[0].selected_ranks' r1.json)" = '[1]' ]
	# iteration 3: task 3 (outside any iteration) goes
	graph2chrome --iterations 3 job.kg > i3.json
	[ "$(jq -c '[.traceEvents[] | select(.ph == "X") | .ts]' i3.json)" = '[0,2,6]' ]
	[ "$(jq -c '.otherData.sections[0].selected_iterations' i3.json)" = '[3]' ]
	# a range and a list; bad lists are usage errors
	graph2chrome --ranks 0-1 --iterations 2,3 job.kg > all.json
	[ "$(jq -c '[.traceEvents[] | select(.ph == "X")] | length' all.json)" = 3 ]
	run -2 --separate-stderr graph2chrome --ranks 1- job.kg
	[ "${stderr_lines[0]}" = "graph2chrome: invalid --ranks '1-' (a list: 0,2,4-7)" ]
	run -2 --separate-stderr graph2chrome --iterations x job.kg
	[ "${stderr_lines[0]}" = "graph2chrome: invalid --iterations 'x' (a list: 3,5-7; or all)" ]
}

@test "graph2chrome: a section of more events than a viewer loads well keeps one iteration, and says so" {
	# tracegen's tiny job: 2 iterations (the header's iters); with the
	# limit lowered to 10 events, the second (the middle one of 2) alone
	tracegen --preset tiny -d tg > /dev/null
	kineto2graph -q tg/rank-0.json.gz > r0.kg
	iters=$(graphcat r0.kg | head -1 | jq -c .iters)
	mid=$(jq '.[length / 2 | floor]' <<< "$iters")
	[ "$(jq length <<< "$iters")" -eq 2 ]
	run -0 --separate-stderr env KG_CHROME_EVENTS=10 graph2chrome -o one.json r0.kg
	n=$(graphcat r0.kg | jq -s '[.[] | select(.r == "task")] | length')
	[ "$stderr" = "graph2chrome: warning: r0.kg: section 0: $n events: iteration $mid alone written (of 2; --iterations LIST or all to choose)" ]
	[ "$(jq -c '[.traceEvents[] | select(.ph == "X" or .ph == "i") | .ts] | length' one.json)" = \
	    "$(graphcat r0.kg | jq -s --argjson m "$mid" '[.[] | select(.r == "task" and .it == $m)] | length')" ]
	jq -e '.otherData.sections[0].note | startswith("iteration '"$mid"' alone written of the section'"'"'s 2")' one.json
	# --iterations all, or -q, and under the limit: no note
	run -0 --separate-stderr env KG_CHROME_EVENTS=10 graph2chrome --iterations all -o every.json r0.kg
	[ -z "$stderr" ]
	jq -e '.otherData.sections[0].note == null' every.json
	[ "$(jq -c '[.traceEvents[] | select(.ph == "X" or .ph == "i")] | length' every.json)" = "$n" ]
	run -0 --separate-stderr env KG_CHROME_EVENTS=10 graph2chrome -q -o /dev/null r0.kg
	[ -z "$stderr" ]
	# the job of 8 ranks, whose one iteration is still too many: its
	# first ranks whose events fit, here (rank 0's alone) rank 0's
	kineto2graph -q tg/*.json.gz | graph-deps --merge 2> /dev/null > job.kg
	m0=$(graphcat job.kg | jq -s --argjson m "$mid" '[.[] | select(.r == "task" and .it == $m)] | length / 8 | floor')
	run -0 --separate-stderr env KG_CHROME_EVENTS=$((m0 * 3 / 2)) graph2chrome -o job.json job.kg
	[[ $stderr == *": iteration $mid and ranks up to 0 alone written (of 2 iterations; --iterations and --ranks to choose)" ]]
	[ "$(jq -c '[.traceEvents[] | select(.name == "process_name") | .args.name]' job.json)" = '["rank 0 (measured)"]' ]
}

@test "graph2chrome: launches and cross-rank waits are flow arrows" {
	mkjob > job.kg
	run -0 graph2chrome job.kg
	run -0 jq -c '[.traceEvents[] | select(.ph == "s" or .ph == "f") | [.ph, .cat, .id, .pid, .tid, .ts]]' <<< "$output"
	# launches at the call's start and the kernel's; the wait from rank
	# 1's kernel (started last, at 7 us) to rank 0's
	[ "$output" = '[["s","launch",1,0,0,0],["f","launch",1,0,1,2],["s","launch",2,1,2,6],["f","launch",2,1,3,7],["s","rank wait",3,1,3,7],["f","rank wait",3,0,1,7]]' ]
	run -0 graph2chrome --measured job.kg
	run -0 jq -c '[.traceEvents[] | select(.cat == "rank wait") | [.ph, .name, .pid, .ts]]' <<< "$output"
	[ "$output" = '[["s","waited for rank 1",1,5],["f","waited for rank 1",0,5]]' ]
}

@test "graph2chrome: the metadata names the source and the tools that made the graph" {
	mkjob > job.kg
	run -0 graph2chrome job.kg
	run -0 jq -c '.otherData' <<< "$output"
	# the configuration from the tags: task 1's layer 3, micro-batch 1,
	# stage 0; no collective names its group's ranks: no dp, tp 1
	[ "$output" = '{"producer":"graph2chrome 0.1","sections":[{"input":"job.kg","source":"","producer":"t","tools":["kineto2graph 0.1","graph-deps 0.1","graphsim 0.1"],"ranks":[0,1],"world":2,"iterations":[3],"edits":[],"configuration":{"ranks":2,"tp":1,"pp":1,"layers":4,"micro_batches":2},"view":"simulated"}]}' ]
	# a what-if tool among the tools is an edit
	mkjob | graphcat | sed 's/"graph-deps 0.1",/"graph-deps 0.1","graph-scale-dp 0.1",/' |
		"$ROOT/tests/tools/jsonl2kg" | zstd -q -c > dp.kg
	run -0 graph2chrome dp.kg
	[ "$(jq -c '.otherData.sections[0].edits' <<< "$output")" = '["graph-scale-dp 0.1"]' ]
}

@test "graph2chrome: --simulated refuses a section without simulated times" {
	mkjob | graphcat -r > /dev/null
	kineto2graph -q -o ex.kg "$ROOT/examples/ddp-step.json"
	run -1 --separate-stderr graph2chrome --simulated -o out.json ex.kg
	[ "$stderr" = "graph2chrome: ex.kg: section 0 has no simulated times (run graphsim first)" ]
	[ ! -e out.json ]
	run -0 graph2chrome -o out.json ex.kg
	[ "$(jq -r '.otherData.sections[0].view' out.json)" = measured ]
}

# --- shared traces ---------------------------------------------------------------

@test "graph2chrome: every shared trace exports one event per task and view, one launch arrow per traced launch" {
	need_traces
	for f in "$TRACES"/hta_small_unit/*.json* "$TRACES"/hta_ddp_2rank_a100_nccl_meta/*.json*; do
		[ -f "$f" ] || continue
		kineto2graph -q "$f" | graphsim > g.kg
		graph2chrome --both -o g.json g.kg
		tasks=$(graphcat g.kg | jq -s '[.[] | select(.r == "task")] | length')
		launches=$(graphcat g.kg | jq -s '[.[] | select(.r == "edge" and .k == "launch" and (.how // "trace") != "inferred")] | length')
		[ "$(jq '[.traceEvents[] | select(.ph == "X")] | length' g.json)" -eq $((2 * tasks)) ]
		[ "$(jq '[.traceEvents[] | select(.ph == "s" and .cat == "launch")] | length' g.json)" -eq $((2 * launches)) ]
	done
}

@test "graph2chrome: the DLRM job's collectives give wait arrows to the ranks that waited" {
	need_traces
	kineto2graph -q "$TRACES"/param_dlrm_8rank_v100/kineto/*.json.gz | graph-deps --merge 2>/dev/null | graphsim > job.kg
	graph2chrome -o job.json job.kg
	# every rank edge joins one waiting member to its group: 7 arrows a
	# collective of 8, as many as the rank edges less ties
	edges=$(graphcat job.kg | jq -s '[.[] | select(.r == "edge" and .k == "rank")] | length')
	arrows=$(jq '[.traceEvents[] | select(.ph == "f" and .cat == "rank wait")] | length' job.json)
	[ "$arrows" -eq "$edges" ]
	[ "$(jq '[.traceEvents[] | select(.name == "process_name")] | length' job.json)" -eq 8 ]
}
