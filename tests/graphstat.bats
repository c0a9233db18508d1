#!/usr/bin/env bats
# graphstat: the checklist; hand-written graphs (tests/fixtures/stat/*.jsonl)
# whose spans, breakdowns, utilization and error are worked out by hand in
# the comments below; and every shared trace through
# kineto2graph | graphsim | graphstat, checked for the breakdown summing
# to the span, by awk rather than by graphstat itself.
#
# Times in the comments are in µs (the fixtures are in ns) unless marked
# ms. "meas" is the original interval, ts to ts + od (od defaulting to d);
# "sim" is ss to se.

load helpers

mkstream() { # JSON lines on stdin -> a graph stream on stdout
	"$ROOT/tests/tools/jsonl2kg" | zstd -q -c
}

# A fixture from tests/fixtures/stat, as a stream in NAME.kg.
fixture() {
	mkstream < "$FIX/stat/$1.jsonl" > "$1.kg"
}

CSV_HEADER=rank,iteration,measured_ns,simulated_ns,error_pct,exposed_compute_ns,overlapped_ns,exposed_comm_ns,other_ns,measured_exposed_compute_ns,measured_overlapped_ns,measured_exposed_comm_ns,measured_other_ns,measured_util,simulated_util,predicted,base_ns,change_pct,peak_allocated_bytes,peak_reserved_bytes,predicted_peak_bytes,device_memory_bytes,fits,unprofiled_ns,profiler_cost,tokens_per_s,tflops_per_gpu,mfu
USAGE="usage: graphstat [--json | --csv] [--critical] [--base FILE] [--util FILE] [--colls FILE] [--comm FILE] [--gpus-per-node N] [--top N] [--device-memory BYTES] [--peak-tflops TFLOPS] [FILE ...]"

# --- the checklist -----------------------------------------------------------

@test "graphstat: --help prints the usage on stdout and exits 0" {
	run -0 --separate-stderr graphstat --help
	[ "${lines[0]}" = "$USAGE" ]
	[[ $output == *"--util FILE"* ]]
	[ -z "$stderr" ]
	run -0 --separate-stderr graphstat -h
	[ "${lines[0]}" = "$USAGE" ]
}

@test "graphstat: --version prints the name and version on stdout" {
	run -0 --separate-stderr graphstat --version
	[[ $output == "graphstat (kgraph) "[0-9]* ]]
	[ -z "$stderr" ]
}

@test "graphstat: an unknown option is a usage error" {
	run -2 --separate-stderr graphstat --frobnicate
	[ -z "$output" ]
	[[ ${stderr_lines[0]} == *"unrecognized option '--frobnicate'" ]]
	[ "${stderr_lines[1]}" = "$USAGE" ]
}

@test "graphstat: a --top that is not a count from 0 to 100000 is a usage error" {
	fixture basic
	for n in x -1 100001 '' 3x; do
		run -2 --separate-stderr graphstat --top "$n" basic.kg
		[ -z "$output" ]
		[ "${stderr_lines[0]}" = "graphstat: invalid --top '$n'" ]
		[ "${stderr_lines[1]}" = "$USAGE" ]
	done
	run -0 graphstat --top 100000 basic.kg
	run -0 graphstat --top 0 basic.kg
}

@test "graphstat: a missing file is named in the error" {
	run -1 --separate-stderr graphstat nosuch.kg
	[ -z "$output" ]
	[ "$stderr" = "graphstat: nosuch.kg: No such file or directory" ]
}

@test "graphstat: a missing file does not stop the other inputs" {
	fixture basic
	run -1 --separate-stderr graphstat --csv nosuch.kg basic.kg
	[ "$stderr" = "graphstat: nosuch.kg: No such file or directory" ]
	[ "${#lines[@]}" -eq 2 ]
	[[ ${lines[1]} == 0,5,* ]]
}

@test "graphstat: empty input is an error" {
	run -1 --separate-stderr graphstat < /dev/null
	[ -z "$output" ]
	[ "$stderr" = "graphstat: -: empty input, not a graph stream" ]
}

@test "graphstat: garbage input is an error" {
	echo junk > junk
	run -1 --separate-stderr graphstat junk
	[ -z "$output" ]
	[ "$stderr" = "graphstat: junk: not a graph stream (no zstd frame)" ]
}

@test "graphstat: a truncated stream is an error" {
	fixture basic
	head -c 60 basic.kg > cut.kg
	run -1 --separate-stderr graphstat cut.kg
	[ -z "$output" ]
	[ "$stderr" = "graphstat: cut.kg: truncated graph stream (ends inside a zstd frame)" ]
}

@test "graphstat: a section without its end record is truncated, and not reported" {
	fixture basic
	grep -v '"r":"end"' "$FIX/stat/basic.jsonl" | mkstream > noend.kg
	# the whole section before it is reported, the unfinished one not
	run -1 --separate-stderr graphstat --csv basic.kg noend.kg
	[ "$stderr" = "graphstat: noend.kg: truncated graph stream (section ends without its end record)" ]
	[ "${#lines[@]}" -eq 2 ]
	[ "${lines[0]}" = "$CSV_HEADER" ]
	[[ ${lines[1]} == 0,5,* ]]
}

@test "graphstat: a full disk is a write error" {
	fixture basic
	for f in "" --csv --json; do
		run -1 --separate-stderr bash -c 'graphstat $1 basic.kg > /dev/full' _ "$f"
		[ "$stderr" = "graphstat: stdout: write error: No space left on device" ]
	done
}

@test "graphstat: a reader that stops early gets no complaint" {
	fixture basic
	# 3000 rows of about 80 bytes: well past a pipe's buffer
	run -0 --separate-stderr bash -c 'graphstat --csv $(yes basic.kg | head -n 3000) | head -n 1'
	[ "$output" = "$CSV_HEADER" ]
	[ -z "$stderr" ]
}

@test "graphstat: stdin gives the same answer as a file operand" {
	fixture two-iter
	for f in "" --csv --json; do
		a=$(graphstat $f two-iter.kg)
		b=$(graphstat $f < two-iter.kg)
		c=$(graphstat $f - < two-iter.kg)
		[ -n "$a" ]
		[ "$a" = "$b" ]
		[ "$a" = "$c" ]
	done
}

@test "graphstat: --util to a path that cannot be written is an error" {
	fixture basic
	run -1 --separate-stderr graphstat --util nodir/u.csv basic.kg
	[ -z "$output" ]
	[ "$stderr" = "graphstat: nodir/u.csv: No such file or directory" ]
	run -1 --separate-stderr graphstat --csv --util /dev/full basic.kg
	[ "$stderr" = "graphstat: /dev/full: write error: No space left on device" ]
}

@test "graphstat: --colls and --comm to a path that cannot be written are errors" {
	fixture basic
	for opt in --colls --comm; do
		run -1 --separate-stderr graphstat "$opt" nodir/c.csv basic.kg
		[ -z "$output" ]
		[ "$stderr" = "graphstat: nodir/c.csv: No such file or directory" ]
		run -1 --separate-stderr graphstat --csv "$opt" /dev/full basic.kg
		[ "$stderr" = "graphstat: /dev/full: write error: No space left on device" ]
	done
}

@test "graphstat: a --util, --colls or --comm file that cannot be written whole is not left" {
	# a job of 8 ranks (4.4 KB of --util, 9 KB of --colls), written under
	# a file-size limit of 1 KB: a write error, and no part of the file
	tracegen --preset tiny --iterations 2 --layers 4 --microbatches 2 -d tg > /dev/null
	kineto2graph -q tg/*.json.gz | graph-deps --merge -q | graphsim > sim.kg
	for opt in --util --colls --comm; do
		graphstat "$opt" whole.csv sim.kg > /dev/null
		[ "$(stat -c %s whole.csv)" -gt 2048 ]
		run -1 --separate-stderr bash -c 'trap "" XFSZ; ulimit -f 1; exec graphstat --csv "$1" x.csv sim.kg > /dev/null' _ "$opt"
		[ "$stderr" = "graphstat: x.csv: write error: File too large" ]
		run -1 compgen -G 'x.csv*'
	done
	# a bad input: none of them written
	printf 'garbage' > bad.kg
	run -1 --separate-stderr graphstat --util u.csv --colls c.csv --comm m.csv sim.kg bad.kg
	run -1 compgen -G '[ucm].csv*'
}

# --- hand-written graphs -----------------------------------------------------

# basic.jsonl, rank 0, iteration 5: the main thread's task, a kernel
# (gemm) on stream 7 and a collective (ncclAllReduce, k "coll") on
# stream 20.
#
#            main        gemm (s7)   nccl (s20)
#   sim      0-100       10-60       40-90
#   meas     0-120       10-60       70-110
#
# sim:  span 100; comp 10-60, comm 40-90: overlapped 40-60 = 20, exposed
#       compute 50 - 20 = 30, exposed comm 50 - 20 = 30, other 100 - |10-90|
#       = 20; 30 + 20 + 30 + 20 = 100. Busy 80 of 100: util 0.8.
# meas: span 120; comp 10-60, comm 70-110: overlapped 0, exposed compute 50,
#       exposed comm 40, other 120 - 90 = 30. Busy 90 of 120: util 0.75.
# error: (100 - 120) / 120 = -16.6667 %.

@test "graphstat: --csv gives the span, error and both breakdowns worked out by hand" {
	fixture basic
	run -0 --separate-stderr graphstat --csv basic.kg
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 2 ]
	[ "${lines[0]}" = "$CSV_HEADER" ]
	[ "${lines[1]}" = "0,5,120000,100000,-16.6667,30000,20000,30000,20000,50000,0,40000,30000,0.7500,0.8000,0,,,,,,,,,,,," ]
}

@test "graphstat: a kernel the communication table names counts as communication though the stream says kern" {
	# basic.jsonl with its NCCL all-reduce turned into a DeepEP combine
	# written as a compute kernel (a stream from before the table knew
	# DeepEP): the same numbers as basic's, worked out above
	fixture oldkern
	run -0 --separate-stderr graphstat --csv oldkern.kg
	[ "${lines[1]}" = "0,5,120000,100000,-16.6667,30000,20000,30000,20000,50000,0,40000,30000,0.7500,0.8000,0,,,,,,,,,,,," ]
}

@test "graphstat: --json gives one object a row with the same numbers" {
	fixture basic
	run -0 --separate-stderr graphstat --json basic.kg
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 1 ]
	jq -e '.rank == 0 and .iteration == 5 and .measured_ns == 120000 and
		.simulated_ns == 100000 and (.error_pct * 10000 | round) == -166667 and
		.exposed_compute_ns == 30000 and .overlapped_ns == 20000 and
		.exposed_comm_ns == 30000 and .other_ns == 20000 and
		.measured == {exposed_compute_ns: 50000, overlapped_ns: 0,
			exposed_comm_ns: 40000, other_ns: 30000, util: 0.75} and
		.simulated == {exposed_compute_ns: 30000, overlapped_ns: 20000,
			exposed_comm_ns: 30000, other_ns: 20000, util: 0.8}' <<< "$output"
}

@test "graphstat: the text report shows the simulated breakdown and its error per category" {
	fixture basic
	run -0 --separate-stderr graphstat basic.kg
	[ -z "$stderr" ]
	# ms with three decimals; the second line is sim - meas per category
	# in % of the measured span (120): compute (30 - 50) / 120 = -16.67,
	# overlapped (20 - 0) / 120 = +16.67, comm (30 - 40) / 120 = -8.33,
	# other (20 - 30) / 120 = -8.33. Util is the simulated one, 80 %.
	[ "${lines[0]}" = "rank  iter         meas ms     sim ms   err % |  exp.comp   overlap  exp.comm     other |  util" ]
	[ "${lines[1]}" = "0     5              0.120      0.100  -16.67 |     0.030     0.020     0.030     0.020 |   80%" ]
	[ "${lines[2]}" = "                                              |    -16.67    +16.67     -8.33     -8.33 | (err, % of span)" ]
	# each kernel less the other class's union: gemm 10-60 less 40-90 = 30,
	# nccl 40-90 less 10-60 = 30; a tie goes to the name defined first
	[ "${lines[3]}" = "  most exposed kernels (simulated; rank 0, iteration 5):" ]
	[ "${lines[4]}" = "       0.030 ms  gemm" ]
	[ "${lines[5]}" = "       0.030 ms  ncclAllReduce" ]
	# no shapes in the fixture: no FLOPs, said last
	[ "${lines[6]}" = "  FLOPs, tokens/s and MFU: no operator shapes in the graph (record_shapes)" ]
	[ "${#lines[@]}" -eq 7 ]
}

@test "graphstat: an unsimulated stream is reported measured only" {
	# basic.jsonl without ss/se (and its sim record): the meas numbers above
	fixture unsimulated
	run -0 --separate-stderr graphstat --csv unsimulated.kg
	[ -z "$stderr" ]
	[ "${lines[1]}" = "0,5,120000,,,50000,0,40000,30000,50000,0,40000,30000,0.7500,,0,,,,,,,,,,,," ]
	run -0 graphstat --json unsimulated.kg
	jq -e '.measured_ns == 120000 and .simulated_ns == null and .error_pct == null and
		.exposed_compute_ns == 50000 and .exposed_comm_ns == 40000 and
		.other_ns == 30000 and .measured.util == 0.75 and (has("simulated") | not)' <<< "$output"
	run -0 graphstat unsimulated.kg
	[ "${lines[1]}" = "0     5              0.120          -       - |     0.050     0.000     0.040     0.030 |   75%" ]
	# no error line; the kernels by measured exposed time: gemm 50, nccl 40
	[ "${lines[2]}" = "  most exposed kernels (measured; rank 0, iteration 5):" ]
	[ "${lines[3]}" = "       0.050 ms  gemm" ]
	[ "${lines[4]}" = "       0.040 ms  ncclAllReduce" ]
}

@test "graphstat: a section where some task lacks ss/se is reported measured only" {
	# basic.jsonl with the kernel's ss/se taken out
	sed '/"id":1,"p":1/s/,"ss":[0-9]*,"se":[0-9]*//' "$FIX/stat/basic.jsonl" | mkstream > part.kg
	run -0 graphstat --csv part.kg
	[ "${lines[1]}" = "0,5,120000,,,50000,0,40000,30000,50000,0,40000,30000,0.7500,,0,,,,,,,,,,,," ]
}

# two-iter.jsonl, rank 1. Iteration 1:
#   main 0-100; "backward" on a second thread 0-300 (no main thread, no
#   stream: it extends nothing); gemm on s7 sim 20-150, meas 20-170 (it
#   ends past the main thread's task, so it ends the span).
#   sim:  span 0-150 = 150; comp 130, other 20; util 130/150 = 0.8667
#   meas: span 0-170 = 170; comp 150, other 20; util 150/170 = 0.8824
#   error (150 - 170) / 170 = -11.7647 %
# Iteration 2:
#   main sim 300-400, meas 300-420; nccl on s20 290-350 (clipped to the
#   span: 300-350 = 50); relu on s7 360-380 (20).
#   sim:  span 100; comp 20, comm 50, other 100 - 70 = 30; util 0.7
#   meas: span 120; comp 20, comm 50, other 120 - 70 = 50; util 70/120 = 0.5833
#   error (100 - 120) / 120 = -16.6667 %
# "prefetch" on s7, iteration -1, has no task on the main thread: no row.

@test "graphstat: two iterations give a row each, clipped to their spans" {
	fixture two-iter
	run -0 --separate-stderr graphstat --csv two-iter.kg
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 3 ]
	[ "${lines[1]}" = "1,1,170000,150000,-11.7647,130000,0,0,20000,150000,0,0,20000,0.8824,0.8667,0,,,,,,,,,,,," ]
	[ "${lines[2]}" = "1,2,120000,100000,-16.6667,20000,0,50000,30000,20000,0,50000,50000,0.5833,0.7000,0,,,,,,,,,,,," ]
	run -0 graphstat --json two-iter.kg
	[ "$(jq -c '[.iteration, .simulated_ns]' <<< "$output" | tr -d '\n')" = "[1,150000][2,100000]" ]
}

@test "graphstat: the kernels' exposed time is a mean over a rank's iterations, clipped to the spans" {
	fixture two-iter
	# over both iterations: gemm 130 (no comm with it), nccl 50 (clipped;
	# no compute in 300-350), relu 20; prefetch is in no reported
	# iteration. Per iteration, the mean of the two: 65, 25, 10.
	run -0 graphstat two-iter.kg
	[ "${lines[6]}" = "  most exposed kernels (simulated; rank 1, per iteration: the mean of 2):" ]
	[ "${lines[7]}" = "       0.065 ms  gemm" ]
	[ "${lines[8]}" = "       0.025 ms  ncclAllReduce" ]
	[ "${lines[9]}" = "       0.010 ms  relu" ]
	# no shapes in the fixture: no FLOPs, said last
	[ "${lines[10]}" = "  FLOPs, tokens/s and MFU: no operator shapes in the graph (record_shapes)" ]
	[ "${#lines[@]}" -eq 11 ]
}

# two-iter's medians: measured (120 + 170) / 2 = 145 us, the range
# -25 / 145 = -17.2% to +17.2%; simulated (100 + 150) / 2 = 125 us,
# (125 - 145) / 145 = -13.79%.
@test "graphstat: after a rank's rows, the median of its iterations and their range" {
	fixture two-iter
	run -0 graphstat two-iter.kg
	[ "${lines[5]}" = "  median of 2 iterations: measured 0.145 ms (0.120 to 0.170, -17.2% to +17.2%), simulated 0.125 ms (-13.79%)" ]
	# not in the machine-readable forms
	run -0 graphstat --csv two-iter.kg
	[[ $output != *median* ]]
	run -0 graphstat --json two-iter.kg
	[[ $output != *median* ]]
	# one iteration: no median
	fixture basic
	run -0 graphstat basic.kg
	[[ $output != *median* ]]
}

# nomain.jsonl, no rank (-1), unsimulated, iteration 0; no thread is
# marked main. Procs: 0 stream 7, 1 thread 10, 2 thread 11.
#   thread 10 (the first thread): step 50-150 and step 160-190
#   thread 11: worker 0-200
#   s7: k 40-180
# Thread 10 stands in for the main thread: span 50-190 = 140; k clipped
# to 50-180 = 130 of compute, other 10; util 130/140 = 0.9286. (Taking
# thread 11 would give 0-200.)

@test "graphstat: a section without a main thread uses its first thread" {
	fixture nomain
	run -0 --separate-stderr graphstat --csv nomain.kg
	[ -z "$stderr" ]
	[ "${lines[1]}" = "-,0,140000,,,130000,0,0,10000,130000,0,0,10000,0.9286,,0,,,,,,,,,,,," ]
}

# util.jsonl, rank 2, iteration 3; a 2.5 ms span, so windows of 1, 1 and
# 0.5 ms. In ms:
#            main      k1 (s7)   k2 (s7)   k3 (s8)   k4 (s7)
#   meas     0-2.5     0.2-0.7   0.9-1.3   1.2-1.8   2.0-2.5
#   sim      1.0-3.5   1.2-1.7   1.9-2.3   2.2-2.8   3.1-3.35
# meas windows: [0,1) k1 0.5 + k2 0.1 = 0.6; [1,2) k2 ∪ k3 = 1.0-1.8 = 0.8;
#   [2,2.5) k4 0.5 of 0.5 = 1.0; mean of the windows 0.8.
# sim windows from the span's start, 1.0: [1,2) 0.5 + 0.1 = 0.6;
#   [2,3) 2.0-2.8 = 0.8; [3,3.5) 0.25 of 0.5 = 0.5; mean 1.9 / 3 = 0.6333.
# Breakdown: meas compute 0.5 + 0.9 + 0.5 = 1.9, other 0.6; sim compute
# 0.5 + 0.9 + 0.25 = 1.65, other 0.85. Both spans 2.5: error 0.

@test "graphstat: --util writes each 1 ms window's busy share, the last one partial" {
	fixture util
	run -0 --separate-stderr graphstat --csv --util u.csv util.kg
	[ -z "$stderr" ]
	[ "${lines[1]}" = "2,3,2500000,2500000,0.0000,1650000,0,0,850000,1900000,0,0,600000,0.8000,0.6333,0,,,,,,,,,,,," ]
	cat > want <<-'EOF'
	rank,iteration,view,window_ms,busy
	2,3,measured,0.000,0.6000
	2,3,measured,1.000,0.8000
	2,3,measured,2.000,1.0000
	2,3,simulated,0.000,0.6000
	2,3,simulated,1.000,0.8000
	2,3,simulated,2.000,0.5000
	EOF
	diff want u.csv
}

@test "graphstat: --util goes by iteration, measured before simulated, with any output format" {
	fixture two-iter
	fixture unsimulated
	# spans under 1 ms: one window each, busy = the util worked out above;
	# an unsimulated section has measured windows only (gemm 10-60 and
	# nccl 70-110 busy 90 of 120)
	graphstat --util u.csv two-iter.kg unsimulated.kg > /dev/null
	cat > want <<-'EOF'
	rank,iteration,view,window_ms,busy
	1,1,measured,0.000,0.8824
	1,1,simulated,0.000,0.8667
	1,2,measured,0.000,0.5833
	1,2,simulated,0.000,0.7000
	0,5,measured,0.000,0.7500
	EOF
	diff want u.csv
	graphstat --json --util u2.csv two-iter.kg unsimulated.kg > /dev/null
	diff want u2.csv
}

# top.jsonl, rank 0, iterations 1 (main 0-200) and 2 (main 200-300):
#            a (s7)    b (s7)    nccl (s20)   c (s7)
#   sim      0-40      50-80     60-100       110-125, and 210-225 (it 2)
#   meas     0-5       50-80     150-190      110-125, and 210-225 (it 2)
# Exposed, sim: a 40; b 30 less 60-80 = 10; nccl 40 less 60-80 = 20;
#   c 15 + 15 = 30 over both iterations: a, c, nccl, b; per iteration
#   (the mean of 2): a 20, c 15, nccl 10, b 5.
# Exposed, meas: a 5, b 30, nccl 40, c 30: nccl, b, c, a; per
#   iteration 2.5, 15, 20, 15 (2.5 us prints as 0.003 ms: the double
#   nearest 0.0025 lies just above it).

@test "graphstat: --top N lists the N kernels with the most exposed time" {
	fixture top
	run -0 --separate-stderr graphstat --top 2 top.kg
	[ -z "$stderr" ]
	# the column header, 2 rows of 2 lines, the median, the coverage
	# line, the list
	[ "${lines[6]}" = "  coverage: events=7 tasks_kern=4" ]
	[ "${lines[7]}" = "  most exposed kernels (simulated; rank 0, per iteration: the mean of 2):" ]
	[ "${lines[8]}" = "       0.020 ms  a" ]
	[ "${lines[9]}" = "       0.015 ms  c" ]
	# no shapes in the fixture: no FLOPs, said last
	[ "${lines[10]}" = "  FLOPs, tokens/s and MFU: no operator shapes in the graph (record_shapes)" ]
	[ "${#lines[@]}" -eq 11 ]
	run -0 graphstat top.kg
	[ "$(printf '%s\n' "${lines[@]:8:4}" | awk '{ print $3 }' | tr '\n' ' ')" = "a c nccl b " ]
	run -0 graphstat --top 0 top.kg
	[ "${#lines[@]}" -eq 8 ] # the FLOPs line too
	[[ $output != *"most exposed"* ]]
}

@test "graphstat: without simulated times the kernels rank by measured exposed time" {
	grep -v '"r":"sim"' "$FIX/stat/top.jsonl" | sed 's/,"ss":[0-9]*,"se":[0-9]*//' | mkstream > meas.kg
	run -0 graphstat meas.kg
	# the column header, 2 rows, the median (measured alone), the
	# coverage line, the list
	[ "${lines[3]}" = "  median of 2 iterations: measured 0.150 ms (0.100 to 0.200, -33.3% to +33.3%)" ]
	[ "${lines[5]}" = "  most exposed kernels (measured; rank 0, per iteration: the mean of 2):" ]
	# b and c tie at 15: b's name is defined first
	[ "${lines[6]}" = "       0.020 ms  nccl" ]
	[ "${lines[7]}" = "       0.015 ms  b" ]
	[ "${lines[8]}" = "       0.015 ms  c" ]
	[ "${lines[9]}" = "       0.003 ms  a" ]
	# no shapes in the fixture: no FLOPs, said last
	[ "${lines[10]}" = "  FLOPs, tokens/s and MFU: no operator shapes in the graph (record_shapes)" ]
	[ "${#lines[@]}" -eq 11 ]
}

@test "graphstat: --csv and --json carry no coverage or kernel list" {
	fixture top
	run -0 graphstat --csv top.kg
	[ "${#lines[@]}" -eq 3 ]
	run -0 graphstat --json top.kg
	[ "${#lines[@]}" -eq 2 ]
	jq -e . <<< "$output" > /dev/null
}

@test "graphstat: several inputs and sections share one CSV header" {
	fixture basic
	fixture two-iter
	fixture nomain
	cat two-iter.kg nomain.kg > both.kg
	run -0 --separate-stderr graphstat --csv basic.kg both.kg
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 5 ]
	[ "${lines[0]}" = "$CSV_HEADER" ]
	[ "$(printf '%s\n' "${lines[@]:1}" | cut -d, -f1,2 | tr '\n' ' ')" = "0,5 1,1 1,2 -,0 " ]
	# a section's main thread does not carry over into the next
	[ "${lines[4]}" = "-,0,140000,,,130000,0,0,10000,130000,0,0,10000,0.9286,,0,,,,,,,,,,,," ]
}

# --- the shared traces -------------------------------------------------------

@test "graphstat: on every shared trace the four categories sum to the span, measured and simulated" {
	need_traces
	find "$TRACES" -name '*.json*' ! -name '*_et.json.gz' ! -name 'MANIFEST.json' | sort > list
	while read -r f; do
		kineto2graph -q "$f" | graphsim | graphstat --csv > out.csv || { echo "fails: $f"; return 1; }
		awk -F, -v f="$f" -v h="$CSV_HEADER" '
			NR == 1 { if ($0 != h) { print f ": header " $0; bad = 1 }; next }
			$4 == "" { print f ": not simulated: " $0; bad = 1 }
			$6 + $7 + $8 + $9 != $4 { print f ": simulated: " $0; bad = 1 }
			$10 + $11 + $12 + $13 != $3 { print f ": measured: " $0; bad = 1 }
			{ n++ }
			END { if (n == 0) { print f ": no rows"; bad = 1 }; exit bad }' out.csv
	done < list
}

@test "graphstat: --json and --csv together are a usage error" {
	run -2 --separate-stderr graphstat --json --csv /dev/null
	[ "${stderr_lines[0]}" = "graphstat: --json and --csv exclude each other" ]
}

# --- job sections (graph-deps --merge) -------------------------------------

# Two ranks, one collective between them. Measured (ns): rank 0's step
# 0-10 then its nccl kernel 10-50; rank 1's step 20-30 then its kernel
# 30-50: both kernels end at 50, rank 1 got there last, rank 0 waited 20.
# Spans: rank 0 0-50 = 50, rank 1 20-50 = 30. Simulated: rank 1 starts 5
# later (25-35), so the collective starts at 35 and both end at 55: rank 0
# 0-55 = 55 (+10%), rank 1 25-55 = 30 (0%); the job is its slowest rank,
# 50 measured, 55 simulated; rank 0 waited 25.
mkjob() {
	mkstream <<-'EOF'
	{"r":"header","format":"kgraph","major":1,"minor":2,"producer":"t","unit":"ns","rank":-1,"world":2,"ranks":[0,1],"clk":[0,0],"t0":[0,20]}
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
	EOF
}

@test "graphstat: a job section is reported per rank and as its slowest rank, in text the job first" {
	mkjob > job.kg
	run -0 --separate-stderr graphstat --csv job.kg
	[ "${#lines[@]}" -eq 4 ]
	[ "$(cut -d, -f1-5 <<< "${lines[1]}")" = "0,1,50,55,10.0000" ]
	[ "$(cut -d, -f1-5 <<< "${lines[2]}")" = "1,1,30,30,0.0000" ]
	[ "$(cut -d, -f1-5 <<< "${lines[3]}")" = "job,1,50,55,10.0000" ]
	run -0 graphstat --json job.kg
	jq -e 'select(.rank == "job") | .measured_ns == 50 and .simulated_ns == 55' <<< "${lines[2]}"
	# text: the summary first (the job's row, its collectives, its
	# kernels), each rank's rows at the end under their own header
	run -0 graphstat job.kg
	[[ ${lines[1]} == "job   1 "* ]]
	[ "${lines[-6]}" = "  each rank:" ]
	[[ ${lines[-5]} == "rank  iter "* ]]
	[[ ${lines[-4]} == "0     1 "* ]]
	[[ ${lines[-2]} == "1     1 "* ]]
}

@test "graphstat: each collective's last rank and the others' waits, measured and simulated" {
	mkjob > job.kg
	run -0 --separate-stderr graphstat --colls colls.csv job.kg
	[ "$(cat colls.csv)" = 'collective,iteration,name,rank,measured_wait_ns,simulated_wait_ns,measured_last_rank,simulated_last_rank
0,1,"nccl",0,20,25,1,1
0,1,"nccl",1,0,0,1,1' ]
	grep -q '^  collectives across ranks: 1;' <<< "$output"
	grep -Eq '^ +0\.000 ms  iter 1  last: rank 1 \(measured: rank 1\)  waited: rank 0 0\.000 ms, rank 1 0\.000 ms  nccl$' <<< "$output"
}

@test "graphstat: --colls with no job section writes the header alone" {
	fixture basic
	run -0 graphstat --colls colls.csv basic.kg
	[ "$(cat colls.csv)" = "collective,iteration,name,rank,measured_wait_ns,simulated_wait_ns,measured_last_rank,simulated_last_rank" ]
}

# Three all-reduces between two ranks, their transfer times made by hand
# from alpha 1000 ns a step (2 steps for 2 ranks) and beta 10 bytes/ns
# (10 GB/s) over 2(n-1)/n = 1 of the message: 1000, 10000 and 100000
# bytes take 2100, 3000 and 12000 ns. The fit gets both back exactly.
mkcomm() {
	mkstream <<-'EOF'
	{"r":"header","format":"kgraph","major":1,"minor":2,"producer":"t","unit":"ns","rank":-1,"world":2,"ranks":[0,1],"clk":[0,0],"t0":[0,0]}
	{"r":"str","id":0,"s":"nccl"}
	{"r":"proc","id":0,"k":"stream","pid":0,"tid":7,"rank":0}
	{"r":"proc","id":1,"k":"stream","pid":0,"tid":7,"rank":1}
	{"r":"task","id":0,"p":0,"k":"coll","n":0,"d":2100,"ts":0,"it":1,"coll":"allreduce","by":1000}
	{"r":"task","id":1,"p":0,"k":"coll","n":0,"d":3000,"ts":5000,"it":1,"coll":"allreduce","by":10000}
	{"r":"task","id":2,"p":0,"k":"coll","n":0,"d":12000,"ts":10000,"it":1,"coll":"allreduce","by":100000}
	{"r":"task","id":3,"p":1,"k":"coll","n":0,"d":2100,"ts":0,"it":1,"coll":"allreduce","by":1000}
	{"r":"task","id":4,"p":1,"k":"coll","n":0,"d":3000,"ts":5000,"it":1,"coll":"allreduce","by":10000}
	{"r":"task","id":5,"p":1,"k":"coll","n":0,"d":12000,"ts":10000,"it":1,"coll":"allreduce","by":100000}
	{"r":"edge","src":0,"dst":3,"k":"rank"}
	{"r":"edge","src":1,"dst":4,"k":"rank"}
	{"r":"edge","src":2,"dst":5,"k":"rank"}
	{"r":"end","tasks":6,"edges":3,"procs":2,"strs":1}
	EOF
}

@test "graphstat: the communication model fitted on a job's collectives gets alpha and beta back" {
	mkcomm > comm.kg
	run -0 --separate-stderr graphstat --comm comm.csv comm.kg
	grep -q '^  allreduce      intra      3  alpha    1.000 us  beta    10.00 GB/s  error   0.00%$' <<< "$output"
	[ "$(cat comm.csv)" = 'collective,iteration,type,ranks,bytes,link,transfer_ns,model_ns,error_pct
0,1,allreduce,2,1000,intra,2100,2100,0.000
1,1,allreduce,2,10000,intra,3000,3000,0.000
2,1,allreduce,2,100000,intra,12000,12000,0.000' ]
}

@test "graphstat: --gpus-per-node puts a group across nodes on the inter-node link" {
	mkcomm > comm.kg
	run -0 --separate-stderr graphstat --gpus-per-node 1 --comm comm.csv comm.kg
	grep -q '^  allreduce      inter      3  alpha    1.000 us' <<< "$output"
	[ "$(cut -d, -f6 comm.csv | sort -u | tr '\n' ' ')" = "inter link " ]
	run -2 --separate-stderr graphstat --gpus-per-node 0 comm.kg
	[ "${stderr_lines[0]}" = "graphstat: invalid --gpus-per-node '0'" ]
}

@test "graphstat: small and large messages get a line each when one does not fit both" {
	# Two regimes between two ranks (2 steps, factor 1): up to 500 bytes
	# alpha 1000 ns, beta 1 byte/ns; from 10000 bytes alpha 5000 ns, beta
	# 100 bytes/ns. The cut falls midway between 500 and 10000.
	awk 'BEGIN {
		print "{\"r\":\"header\",\"format\":\"kgraph\",\"major\":1,\"minor\":2,\"producer\":\"t\",\"unit\":\"ns\",\"rank\":-1,\"world\":2,\"ranks\":[0,1]}"
		print "{\"r\":\"str\",\"id\":0,\"s\":\"nccl\"}"
		print "{\"r\":\"proc\",\"id\":0,\"k\":\"stream\",\"pid\":0,\"tid\":7,\"rank\":0}"
		print "{\"r\":\"proc\",\"id\":1,\"k\":\"stream\",\"pid\":0,\"tid\":7,\"rank\":1}"
		for (i = 0; i < 10; i++) {
			b = i < 5 ? 100 * (i + 1) : 10000 * (i - 4)
			t = i < 5 ? 2000 + b : 10000 + b / 100
			for (p = 0; p < 2; p++)
				printf "{\"r\":\"task\",\"id\":%d,\"p\":%d,\"k\":\"coll\",\"n\":0,\"d\":%d,\"ts\":%d,\"it\":1,\"coll\":\"allreduce\",\"by\":%d}\n", 2 * i + p, p, t, 20000 * i, b
		}
		for (i = 0; i < 10; i++)
			printf "{\"r\":\"edge\",\"src\":%d,\"dst\":%d,\"k\":\"rank\"}\n", 2 * i, 2 * i + 1
		print "{\"r\":\"end\",\"tasks\":20,\"edges\":10,\"procs\":2,\"strs\":1}"
	}' | mkstream > two.kg
	run -0 --separate-stderr graphstat --comm comm.csv two.kg
	grep -q '^  allreduce      intra     10  up to      5250 B  alpha    1.000 us  beta     1.00 GB/s  error   0.00%$' <<< "$output"
	grep -q '^                               past       5250 B  alpha    5.000 us  beta   100.00 GB/s$' <<< "$output"
	[ "$(awk -F, 'NR > 1 && $8 != $7' comm.csv)" = "" ]
}

@test "graphstat: the measured memory peak of each iteration comes from its tasks' allocator events, with where it was reached" {
	# rules/memory.json (kineto2graph rule 8): aten::a keeps 3100 bytes
	# allocated at most and 8192 reserved, aten::b 1600, aten::c 1000,
	# all in iteration 1: the iteration's peak is aten::a's
	kineto2graph -q -o mem.kg "$FIX/rules/memory.json"
	run -0 --separate-stderr graphstat --csv mem.kg
	[ "$(awk -F, 'NR > 1 { print $2, $19, $20 }' <<< "$output")" = "1 3100 8192" ]
	run -0 --separate-stderr graphstat --json mem.kg
	jq -e '.peak_allocated_bytes == 3100 and .peak_reserved_bytes == 8192' <<< "$output"
	run -0 --separate-stderr graphstat mem.kg
	grep -qx '    rank 0, iteration 1: 0.000 GiB allocated, 0.000 GiB reserved, in aten::a (no phase)' <<< "$output"
	# a trace without allocator events leaves the columns empty
	fixture basic
	run -0 graphstat --csv basic.kg
	[ "$(awk -F, 'NR > 1 { print $19 "|" $20 }' <<< "$output")" = "|" ]
}

@test "graphstat: on the H100 _mem traces each iteration's measured peak is torch.cuda's (within 1%), and a what-if graph reports none" {
	need_gpu
	f=$GPU/gptB_L4_H2560_mem
	kineto2graph -q -o m.kg "$f.json.gz"
	graphstat --csv m.kg | awk -F, -v a="$(jq .peak_allocated_bytes "$f.meta.json")" \
	    -v r="$(jq .peak_reserved_bytes "$f.meta.json")" 'NR > 1 { n++
		if ($19 < 0.99 * a || $19 > 1.01 * a) exit 1
		if ($20 < 0.99 * r || $20 > 1.01 * r) exit 1 } END { exit n == 0 }'
	graph-scale-layers -q 8 m.kg | graphsim | graphstat --csv |
	    awk -F, 'NR > 1 && ($19 != "" || $20 != "") { exit 1 }'
}
