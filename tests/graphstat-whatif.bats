#!/usr/bin/env bats
# graphstat on a what-if graph: a graph edited by a graph-scale tool is a
# prediction, reported with its configuration and, with --base, the
# base's time and the predicted change, not an error against the trace
# of another configuration. Hand-made graphs, worked out below (ns), and
# a tracegen job through graph-scale-pp.

load helpers

mkstream() { # JSON lines on stdin -> a graph stream on stdout
	"$ROOT/tests/tools/jsonl2kg" | zstd -q -c
}

# One rank, iteration 1: a step on the main thread 0-100000 and a
# kernel 0-50000 (simulated as traced). TOOLS and the kernel's end
# change between the base and the edited graph; the edited one's tasks
# carry layers 0-1, micro-batches 0-2 and stage 0.
mkgraph() { # TOOLS SIM_END LAYER MB
	mkstream <<-EOF2
	{"r":"header","format":"kgraph","major":1,"minor":3,"producer":"t","unit":"ns","rank":0,"iters":[1],"tools":[$1]}
	{"r":"str","id":0,"s":"step"}
	{"r":"str","id":1,"s":"gemm"}
	{"r":"proc","id":0,"k":"thread","pid":1,"tid":1,"main":true}
	{"r":"proc","id":1,"k":"stream","pid":0,"tid":7}
	{"r":"task","id":0,"p":0,"k":"cpu","n":0,"d":100000,"ts":0,"it":1,"ss":0,"se":100000}
	{"r":"task","id":1,"p":1,"k":"kern","n":1,"d":$2,"ts":0,"it":1,"ly":$3,"mb":$4,"st":0,"ss":0,"se":$2}
	{"r":"task","id":2,"p":1,"k":"kern","n":1,"d":10,"ts":0,"it":-1,"ly":0,"mb":0,"ss":0,"se":10}
	{"r":"end","tasks":3,"edges":0,"procs":2,"strs":2}
	EOF2
}

# base: its span is 100000 (the step); edited: the kernel runs to 150000,
# the span with it.
setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	mkgraph '"kineto2graph 0.1","graphsim 0.1"' 50000 -1 -1 > base.kg
	mkgraph '"kineto2graph 0.1","graph-scale-layers 0.1","graphsim 0.1"' 150000 1 2 > edited.kg
}

@test "graphstat: an edited graph says what it predicts, from what, and in which configuration" {
	run -0 --separate-stderr graphstat edited.kg
	[ -z "$stderr" ]
	[ "${lines[0]}" = "prediction: a graph made by kineto2graph 0.1 | graph-scale-layers 0.1 | graphsim 0.1" ]
	# layers 0-1, micro-batches 0-2, stage 0; no collectives: tp 1
	[ "${lines[1]}" = "  configuration: 1 rank, tp 1, pp 1, 2 layers, 3 micro-batches; GPU and network: not recorded in the graph" ]
	[ "${lines[2]}" = "rank  iter         base ms    pred ms change % |  exp.comp   overlap  exp.comm     other |  util" ]
	# no base: no change; no error line
	[ "${lines[3]}" = "0     1                  -      0.150        - |     0.150     0.000     0.000     0.000 |  100%" ]
	[[ $output != *"err"* ]]
}

@test "graphstat: --base gives the base's time and the predicted change" {
	run -0 --separate-stderr graphstat --base base.kg edited.kg
	[ -z "$stderr" ]
	[ "${lines[2]}" = "  base: base.kg, simulated" ]
	# (150000 - 100000) / 100000 = +50 %
	[ "${lines[4]}" = "0     1              0.100      0.150   +50.00 |     0.150     0.000     0.000     0.000 |  100%" ]
	run -0 graphstat --csv --base base.kg edited.kg
	# measured_ns, error_pct and the measured breakdown are empty: the
	# trace is of another configuration
	[ "${lines[1]}" = "0,1,,150000,,150000,0,0,0,,,,,,1.0000,1,100000,50.0000,,,,,,,,,," ]
	run -0 graphstat --json --base base.kg edited.kg
	jq -e '.predicted == true and .measured_ns == null and .error_pct == null and
		.measured == null and .simulated_ns == 150000 and .base_ns == 100000 and
		.change_pct == 50' <<< "$output"
}

@test "graphstat: --base on a graph that is not edited compares it with the base too" {
	run -0 graphstat --csv --base edited.kg base.kg
	# (100000 - 150000) / 150000 = -33.3333 %; the measurement stays;
	# the kernel busy half the span: util 0.5
	[ "${lines[1]}" = "0,1,100000,100000,0.0000,50000,0,0,50000,50000,0,0,50000,0.5000,0.5000,0,150000,-33.3333,,,,,,,,,," ]
}

@test "graphstat: a --base with no iteration and rank in common is said" {
	# the base's iteration 1 made iteration 7: no row meets another
	graphcat base.kg | sed 's/"it":1\([,}]\)/"it":7\1/; s/"iters":\[1\]/"iters":[7]/' | mkstream > other.kg
	run -0 --separate-stderr graphstat --base other.kg edited.kg
	[ "$stderr" = "graphstat: warning: edited.kg: no iteration and rank in common with the base other.kg: nothing to compare (a graph of another job?)" ]
	# a base that shares the iteration: no warning
	run -0 --separate-stderr graphstat --base base.kg edited.kg
	[ -z "$stderr" ]
}

@test "graphstat: a --base that cannot be read is an error before any output" {
	run -1 --separate-stderr graphstat --base nosuch.kg edited.kg
	[ -z "$output" ]
	[ "$stderr" = "graphstat: nosuch.kg: No such file or directory" ]
	printf 'junk\n' > junk
	run -1 --separate-stderr graphstat --base junk edited.kg
	[ -z "$output" ]
	[ "$stderr" = "graphstat: junk: not a graph stream (no zstd frame)" ]
}

@test "graphstat: a rank or iteration the trace lacks shows as -, or null in JSON" {
	mkstream > none.kg <<-'EOF'
	{"r":"header","format":"kgraph","major":1,"minor":3,"producer":"t","unit":"ns"}
	{"r":"str","id":0,"s":"x"}
	{"r":"proc","id":0,"k":"thread","pid":1,"tid":1,"main":true}
	{"r":"task","id":0,"p":0,"k":"cpu","n":0,"d":1000,"ts":0,"it":-1}
	{"r":"end","tasks":1,"edges":0,"procs":1,"strs":1}
	EOF
	run -0 graphstat none.kg
	[[ ${lines[1]} == "-     -              0.001 "* ]]
	run -0 graphstat --csv none.kg
	[[ ${lines[1]} == "-,-,1000,"* ]]
	run -0 graphstat --json none.kg
	jq -e '.rank == null and .iteration == null' <<< "$output"
}

@test "graphstat: a pipeline-parallel what-if of a tracegen job names its new degrees and its change" {
	# tracegen's job: tp 2, pp 2, dp 2 (8 ranks), 4 layers, 4 micro-batches;
	# graph-scale-pp 4 makes it 4 stages: 16 ranks, tp and dp kept
	tracegen --preset tiny --tp 2 --pp 2 --dp 2 --layers 4 --microbatches 4 -d tg > /dev/null
	kineto2graph -q tg/*.json.gz | graph-deps --merge 2> /dev/null > job.kg
	graphsim job.kg > base.kg
	graph-scale-pp -q --net 50,5 4 job.kg | graphsim > pp4.kg
	run -0 --separate-stderr graphstat --base base.kg pp4.kg
	# the degree set, and the job's size: 8 ranks / 2 stages * 4
	[ "${lines[0]}" = "prediction: a graph made by kineto2graph 0.1 | graph-deps 0.1 | graph-scale-pp 0.1 set: pp=4, world=16 | graphsim 0.1" ]
	# the GPU as the traces' deviceProperties describe it
	gpu=$(zcat tg/rank-0.json.gz | jq -r '.deviceProperties[0] | "\(.name)\t\(.numSms)\t\(.totalGlobalMem)"' |
		awk -F'\t' '{ printf "%s (%d SMs, %.1f GiB)", $1, $2, $3 / 1073741824 }')
	[ "${lines[1]}" = "  configuration: 16 ranks, dp 2, tp 2, pp 4, 4 layers, 4 micro-batches; GPU: $gpu; network: not recorded in the graph" ]
	# the collectives' last ranks, simulated, with no "measured" one
	grep -q '^  collectives across ranks: ' <<< "$output"
	grep -q ' last: rank [0-9]*  waited: ' <<< "$output"
	[[ $output != *"(measured: rank"* ]]
	# each job row's change is its time against the base job's, by awk
	graphstat --csv base.kg | awk -F, '$1 == "job" { print $2, $4 }' > b
	graphstat --csv --base base.kg pp4.kg | awk -F, '$1 == "job" { print $2, $4, $17, $18 }' > p
	awk 'NR == FNR { b[$1] = $2; next }
		{ want = 100 * ($2 - b[$1]) / b[$1]; d = want - $4
		  if ($3 != b[$1] || d > 1e-4 || d < -1e-4) { print "bad", $0; exit 1 } n++ }
		END { exit n != 2 }' b p
	# after the job rows, their median (of two: the mean), its range, and
	# the base job's median with the change between the two
	want=$(awk 'NR == FNR { bs += $2; next }
		{ ps += $2; lo = (lo == "" || $2 < lo) ? $2 : lo; hi = ($2 > hi) ? $2 : hi }
		END { m = ps / 2; bm = bs / 2
		      printf "  median of 2 iterations: predicted %.3f ms (%.3f to %.3f, %+.1f%% to %+.1f%%), base %.3f ms (change %+.2f%%)",
			m / 1e6, lo / 1e6, hi / 1e6, 100 * (lo - m) / m, 100 * (hi - m) / m, bm / 1e6, 100 * (m - bm) / bm }' b p)
	grep -qxF -- "$want" <<< "$output"
}

# tracegen's tiny job (tp 2, pp 2, dp 2: 8 ranks; 4 layers, 4
# micro-batches, hidden 256), made once for the tests below.
tgjob() {
	if [ ! -s "$BATS_FILE_TMPDIR/job.kg" ]; then
		tracegen --preset tiny -d "$BATS_FILE_TMPDIR/tg" > /dev/null &&
		kineto2graph -q "$BATS_FILE_TMPDIR"/tg/*.json.gz | graph-deps --merge 2> /dev/null \
			> "$BATS_FILE_TMPDIR/job.kg"
	fi
	cp "$BATS_FILE_TMPDIR/job.kg" job.kg
}

# graphstat's configuration line of a graph on stdin, less its GPU part
conf() {
	graphsim | graphstat | sed -n 2p | sed 's/; GPU.*//'
}

@test "graphstat: after graph-scale-dp the configuration has the new data-parallel degree, and so has graph2chrome's" {
	tgjob
	# tp 2 x pp 2 x dp 8: a job of 32 ranks, of which the graph holds 8
	[ "$(graph-scale-dp -q 8 job.kg | conf)" = "  configuration: 8 ranks (of 32), dp 8, tp 2, pp 2, 4 layers, 4 micro-batches" ]
	graph-scale-dp -q 8 job.kg | graphsim | graph2chrome > t.json
	[ "$(jq -c '.otherData.sections[0].configuration' t.json)" = '{"ranks":8,"world":32,"dp":8,"tp":2,"pp":2,"layers":4,"micro_batches":4}' ]
}

@test "graphstat: after graph-scale-tp the configuration has the new tensor-parallel degree" {
	tgjob
	# tp 4 x pp 2 x dp 2 = 16
	[ "$(graph-scale-tp -q 4 job.kg | conf)" = "  configuration: 8 ranks (of 16), dp 2, tp 4, pp 2, 4 layers, 4 micro-batches" ]
}

@test "graphstat: after graph-scale-pp and graph-scale-layers the configuration has the new depth and layers" {
	tgjob
	# 4 stages: 16 ranks held; --microbatches 8 set too
	[ "$(graph-scale-pp -q --net 50,5 --microbatches 8 4 job.kg | conf)" = "  configuration: 16 ranks, dp 2, tp 2, pp 4, 4 layers, 8 micro-batches" ]
	[ "$(graph-scale-layers -q 8 job.kg | conf)" = "  configuration: 8 ranks, dp 2, tp 2, pp 2, 8 layers, 4 micro-batches" ]
}

@test "graphstat: after graph-scale-hidden the configuration has the hidden size, and graph-retime's entry its factors" {
	tgjob
	[ "$(graph-scale-hidden -q 512 job.kg | conf)" = "  configuration: 8 ranks, dp 2, tp 2, pp 2, 4 layers, hidden 512, 4 micro-batches" ]
	graph-retime -q --speedup gemm=2 --speedup 'attn*=1.5' job.kg | graphsim | graphstat > r.txt
	[ "$(sed -n 1p r.txt)" = "prediction: a graph made by kineto2graph 0.1 | graph-deps 0.1 | graph-retime 0.1 speedup: gemm=2, attn*=1.5 | graphsim 0.1" ]
	[ "$(sed -n 2p r.txt | sed 's/; GPU.*//')" = "  configuration: 8 ranks, dp 2, tp 2, pp 2, 4 layers, 4 micro-batches" ]
}

@test "graphstat: a chain of what-if tools gives the configuration they make together" {
	tgjob
	# dp 8, then 4 stages (16 ranks held), tp 4: 8 x 4 x 4 = 128 ranks;
	# 6 layers, hidden 512; each tool's world from the one before it
	graph-scale-dp -q 8 job.kg | graph-scale-pp -q --net 50,5 4 | graph-scale-tp -q 4 |
		graph-scale-layers -q 6 | graph-scale-hidden -q 512 > chain.kg
	[ "$(conf < chain.kg)" = "  configuration: 16 ranks (of 128), dp 8, tp 4, pp 4, 6 layers, hidden 512, 4 micro-batches" ]
	# a later tool's degree wins: dp 8 then dp 4 (of tp 4 x pp 4)
	[ "$(graph-scale-dp -q 4 chain.kg | conf)" = "  configuration: 16 ranks (of 64), dp 4, tp 4, pp 4, 6 layers, hidden 512, 4 micro-batches" ]
}
