#!/usr/bin/env bats
# graphstat --critical: hand-made graphs whose critical path is worked
# out by hand in the comments (ns); the DLRM 8-rank job, whose path must
# cross ranks where its collectives waited; and every shared trace,
# whose path's links must tile the iteration's span (summed by awk, the
# span taken from graphstat's own table, computed by other code).

load helpers

mkstream() { # JSON lines on stdin -> a graph stream on stdout
	"$ROOT/tests/tools/jsonl2kg" | zstd -q -c
}

# One rank, iteration 5. Simulated: op 0-100, launch call 100-150, a
# host gap of 20 (the thread edge's delay) to another op 170-200, the
# kernel it launched 200-700, a synchronize 700-720 waiting on it. The
# span is 0-720 (the sync ends last). Backwards: the sync [700,720]
# (released by the kernel, whose end is the latest of its two
# predecessors'), the kernel [200,700], launch latency [150,200] (the
# launch edge), the launch call [100,150], the op [0,100]. Host 170,
# launch 50, compute 500: 720. The measured sync starts at 650 (it
# waited for the kernel): the path takes it from the kernel's end, 700,
# and is the same.
mkone() {
	mkstream <<-'EOF2'
	{"r":"header","format":"kgraph","major":1,"minor":3,"producer":"t","unit":"ns","rank":0,"iters":[5]}
	{"r":"str","id":0,"s":"op"}
	{"r":"str","id":1,"s":"cudaLaunchKernel"}
	{"r":"str","id":2,"s":"gemm"}
	{"r":"str","id":3,"s":"other op"}
	{"r":"str","id":4,"s":"cudaStreamSynchronize"}
	{"r":"proc","id":0,"k":"thread","pid":1,"tid":1,"main":true}
	{"r":"proc","id":1,"k":"stream","pid":0,"tid":7}
	{"r":"task","id":0,"p":0,"k":"cpu","n":0,"d":100,"ts":0,"it":5,"ss":0,"se":100}
	{"r":"task","id":1,"p":0,"k":"rt","n":1,"d":50,"ts":100,"it":5,"ss":100,"se":150}
	{"r":"task","id":2,"p":1,"k":"kern","n":2,"d":500,"ts":200,"it":5,"ss":200,"se":700}
	{"r":"task","id":3,"p":0,"k":"cpu","n":3,"d":30,"ts":170,"it":5,"ss":170,"se":200}
	{"r":"task","id":4,"p":0,"k":"rt","n":4,"d":20,"od":70,"ts":650,"it":5,"ss":700,"se":720}
	{"r":"edge","src":0,"dst":1,"k":"thread"}
	{"r":"edge","src":1,"dst":2,"k":"launch","dl":50}
	{"r":"edge","src":1,"dst":3,"k":"thread","dl":20}
	{"r":"edge","src":3,"dst":4,"k":"thread"}
	{"r":"edge","src":2,"dst":4,"k":"sync"}
	{"r":"end","tasks":5,"edges":5,"procs":2,"strs":5}
	EOF2
}

ONE_CSV='rank,iteration,task,kind,start_ns,end_ns,duration_ns,path,name
0,5,0,host,0,100,100,0,"op"
0,5,1,host,100,150,50,0,"cudaLaunchKernel"
0,5,-,launch,150,200,50,0,""
0,5,2,compute,200,700,500,0,"gemm"
0,5,4,host,700,720,20,0,"cudaStreamSynchronize"'

@test "graphstat --critical: a one-rank path worked out by hand, simulated and measured" {
	mkone > one.kg
	run -0 --separate-stderr graphstat --critical --csv one.kg
	[ -z "$stderr" ]
	[ "$output" = "$ONE_CSV" ]
	mkone | graphcat | grep -v '"r":"sim"' | "$ROOT/tests/tools/jsonl2kg" | zstd -q -c > meas.kg
	run -0 graphstat --critical --csv meas.kg
	[ "$output" = "$ONE_CSV" ]
}

@test "graphstat --critical: the text and JSON forms sum the path by kind" {
	mkone > one.kg
	run -0 --separate-stderr graphstat --critical one.kg
	[ "${lines[0]}" = "critical path, rank 0, iteration 5 (simulated): 0.001 ms in 5 links, on rank 0" ]
	grep -Eq '^  host +0\.000 ms +23\.6%$' <<< "$output"     # 170 / 720
	grep -Eq '^  launch latency +0\.000 ms +6\.9%$' <<< "$output" # 50 / 720
	grep -Eq '^  compute +0\.001 ms +69\.4%$' <<< "$output"  # 500 / 720
	run -0 graphstat --critical --json one.kg
	jq -e '.span_ns == 720 and .kinds.host_ns == 170 and .kinds.launch_ns == 50 and
		.kinds.compute_ns == 500 and .kinds.idle_ns == 0 and .ranks == [0] and
		.top_tasks[0].name == "gemm" and .top_kernels == [{"name":"gemm","ns":500}] and
		(.links | length) == 5' <<< "$output"
}

# Two ranks. Simulated: rank 0's step 0-10 launches its all-reduce,
# which starts at 10 and waits for rank 1's; rank 1 begins at 25 (its
# t0), its step 25-35 launches its all-reduce at 35; both transfer for 20
# and end at 55. Spans: rank 0 0-55, rank 1 25-55: the job's path is
# rank 0's. Backwards: rank 0's all-reduce from rank 1's start, 35, to 55
# (communication); then rank 1's kernel, which started at 35 (nothing
# before that on it), its step [25,35] and idle [0,25] on rank 1, which
# had not begun. Measured: the steps at 0 and 20, the kernels at 10
# (40 long: it waited) and 30, ending at 50: the same path, 20 earlier
# on rank 1.
mkjob() {
	mkstream <<-'EOF2'
	{"r":"header","format":"kgraph","major":1,"minor":3,"producer":"t","unit":"ns","rank":-1,"world":2,"ranks":[0,1],"clk":[0,0],"t0":[0,25],"iters":[1]}
	{"r":"str","id":0,"s":"step"}
	{"r":"str","id":1,"s":"nccl"}
	{"r":"proc","id":0,"k":"thread","pid":1,"tid":1,"main":true,"rank":0}
	{"r":"proc","id":1,"k":"stream","pid":0,"tid":7,"rank":0}
	{"r":"proc","id":2,"k":"thread","pid":2,"tid":2,"main":true,"rank":1}
	{"r":"proc","id":3,"k":"stream","pid":0,"tid":7,"rank":1}
	{"r":"task","id":0,"p":0,"k":"cpu","n":0,"d":10,"ts":0,"it":1,"ss":0,"se":10}
	{"r":"task","id":1,"p":1,"k":"coll","n":1,"d":20,"od":40,"ts":10,"it":1,"ss":10,"se":55}
	{"r":"task","id":2,"p":2,"k":"cpu","n":0,"d":10,"ts":20,"it":1,"ss":25,"se":35}
	{"r":"task","id":3,"p":3,"k":"coll","n":1,"d":20,"ts":30,"it":1,"ss":35,"se":55}
	{"r":"edge","src":0,"dst":1,"k":"launch"}
	{"r":"edge","src":2,"dst":3,"k":"launch"}
	{"r":"edge","src":1,"dst":3,"k":"rank"}
	{"r":"end","tasks":4,"edges":3,"procs":4,"strs":2}
	EOF2
}

@test "graphstat --critical: a job's path crosses to the rank its collective waited for" {
	mkjob > job.kg
	run -0 --separate-stderr graphstat --critical --csv job.kg
	[ "$output" = 'rank,iteration,task,kind,start_ns,end_ns,duration_ns,path,name
1,1,-,idle,0,25,25,job,""
1,1,2,host,25,35,10,job,"step"
0,1,1,communication,35,55,20,job,"nccl"' ]
	mkjob | graphcat | grep -v '"r":"sim"' | "$ROOT/tests/tools/jsonl2kg" | zstd -q -c > meas.kg
	run -0 graphstat --critical --csv meas.kg
	[ "$output" = 'rank,iteration,task,kind,start_ns,end_ns,duration_ns,path,name
1,1,-,idle,0,20,20,job,""
1,1,2,host,20,30,10,job,"step"
0,1,1,communication,30,50,20,job,"nccl"' ]
	run -0 graphstat --critical job.kg
	[ "${lines[0]}" = "critical path, job, iteration 1 (simulated): 0.000 ms in 3 links, on ranks 0 1" ]
}

# A traced all-reduce alone (one rank, no peers in the graph): 500 long,
# of which the last 200 (its d) is the transfer and the first 300 the
# wait for ranks the graph does not hold.
@test "graphstat --critical: a collective's time beyond its transfer is waiting on another rank" {
	mkstream > c.kg <<-'EOF'
	{"r":"header","format":"kgraph","major":1,"minor":3,"producer":"t","unit":"ns"}
	{"r":"str","id":0,"s":"nccl"}
	{"r":"proc","id":0,"k":"thread","pid":1,"tid":1,"main":true}
	{"r":"proc","id":1,"k":"stream","pid":0,"tid":7}
	{"r":"task","id":0,"p":0,"k":"cpu","n":0,"d":0,"ts":0,"it":-1}
	{"r":"task","id":1,"p":1,"k":"coll","n":0,"d":200,"od":500,"ts":0,"it":-1}
	{"r":"end","tasks":2,"edges":0,"procs":2,"strs":1}
	EOF
	run -0 graphstat --critical --csv c.kg
	# no rank, no iteration: "-"
	[ "$output" = 'rank,iteration,task,kind,start_ns,end_ns,duration_ns,path,name
-,-,1,wait,0,300,300,-,"nccl"
-,-,1,communication,300,500,200,-,"nccl"' ]
}

@test "graphstat --critical: on the DLRM 8-rank job the path crosses ranks at the collectives" {
	need_traces
	kineto2graph -q "$TRACES"/param_dlrm_8rank_v100/kineto/*.json.gz | graph-deps --merge 2>/dev/null | graphsim > job.kg
	run -0 graphstat --critical --csv job.kg
	# more than one rank on the path, and the crossing is at a collective:
	# a link on one rank right after one on another, the later a collective
	awk -F, 'NR > 1 { r[$1] = 1; if (prev != "" && $1 != prev && $4 == "communication") x++; prev = $1 }
		END { n = 0; for (k in r) n++; exit !(n > 1 && x > 0) }' <<< "$output"
	# and its links sum to the job row's simulated span
	span=$(graphstat --csv job.kg | awk -F, '$1 == "job" { print $4 }')
	[ "$(awk -F, 'NR > 1 { s += $7 } END { printf "%.0f", s }' <<< "$output")" = "$span" ]
}

@test "graphstat --critical: on every shared trace the path's links tile the span" {
	need_traces
	n=0
	for f in $(find "$TRACES" -name '*.json' -o -name '*.json.gz' | grep -v -e pytorch_et -e synthetic | sort); do
		kineto2graph -q "$f" 2>/dev/null | graphsim > g.kg 2>/dev/null || continue
		graphstat --csv g.kg | awk -F, 'NR > 1 { print $1 "," $2 "," $4 }' | sort > spans
		graphstat --critical --csv g.kg > path.csv
		# per iteration: links end to end (each starts where the last
		# ended) and their sum is graphstat's simulated span
		awk -F, 'NR > 1 { k = $2; if (k in e && $5 != e[k]) { print "gap in " k; bad = 1 }
			e[k] = $6; s[k] += $7; r[k] = $8 }
			END { for (k in s) printf "%s,%s,%.0f\n", r[k], k, s[k]; exit bad }' path.csv | sort > sums
		[ -s sums ]
		diff spans sums
		n=$((n + 1))
	done
	[ "$n" -ge 8 ]
}
