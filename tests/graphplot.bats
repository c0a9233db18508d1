#!/usr/bin/env bats
# graphplot: the checklist; pictures of hand-written CSV whose bars and
# lines are placed by the arithmetic in the comments; every kind of
# input rendered to PNG by rsvg-convert (Debian's librsvg2-bin) to prove
# it draws, skipped with a message where it is not installed.

load helpers

USAGE="usage: graphplot [--all] [--against COLUMN] [--title TEXT] [-o FILE] [FILE]"
STAT_HEADER=rank,iteration,measured_ns,simulated_ns,error_pct,exposed_compute_ns,overlapped_ns,exposed_comm_ns,other_ns,measured_exposed_compute_ns,measured_overlapped_ns,measured_exposed_comm_ns,measured_other_ns,measured_util,simulated_util,predicted,base_ns,change_pct

# Two ranks and the job, iteration 1: rank 0 is 10 ms (4 compute, 1
# overlapped, 3 comm, 2 other), rank 1 5 ms, the job 10 ms.
mkstat() {
	cat <<-EOF
	$STAT_HEADER
	0,1,10000000,10000000,0,4000000,1000000,3000000,2000000,,,,,,,0,,
	1,1,5000000,5000000,0,5000000,0,0,0,,,,,,,0,,
	job,1,10000000,10000000,0,4000000,1000000,3000000,2000000,,,,,,,0,,
	EOF
}

render_out() { # $output as an SVG -> PNG; prints "WIDTH HEIGHT COLOURS"
	printf '%s\n' "$output" > out.svg
	render out.svg
}

render() { # SVG -> PNG; prints "WIDTH HEIGHT COLOURS"
	command -v rsvg-convert > /dev/null || skip "no rsvg-convert (apt-get install librsvg2-bin)"
	rsvg-convert -o "${1%.svg}.png" "$1"
	"$ROOT/tests/tools/pngstat" "${1%.svg}.png"
}

@test "graphplot: --help prints the usage on stdout and exits 0" {
	run -0 --separate-stderr graphplot --help
	[ "${lines[0]}" = "$USAGE" ]
	[ -z "$stderr" ]
}

@test "graphplot: an unknown option or two inputs are usage errors" {
	run -2 --separate-stderr graphplot --bogus
	[ "${stderr_lines[1]}" = "$USAGE" ]
	run -2 --separate-stderr graphplot a b
	[ "${stderr_lines[0]}" = "graphplot: one input at most" ]
}

@test "graphplot: a missing file, empty input, a CSV it does not know are errors, and -o leaves no file" {
	run -1 --separate-stderr graphplot -o out.svg nosuch.csv
	[ "$stderr" = "graphplot: nosuch.csv: No such file or directory" ]
	run -1 --separate-stderr graphplot -o out.svg < /dev/null
	[ "$stderr" = "graphplot: -: empty input" ]
	printf 'a,b\n1,2\n' > other.csv
	run -1 --separate-stderr graphplot -o out.svg other.csv
	[ "$stderr" = "graphplot: other.csv: not a CSV graphplot draws (graphstat --csv, --util or --critical --csv, or a pipelines sweep)" ]
	[ ! -e out.svg ]
}

@test "graphplot: a bad number or a short row names its line" {
	{ mkstat; echo "2,1,1,1,0,x,0,0,0,,,,,,,0,,"; } > bad.csv
	run -1 --separate-stderr graphplot -o out.svg bad.csv
	[ "$stderr" = "graphplot: bad.csv: line 5: bad exposed_compute_ns 'x'" ]
	{ mkstat; echo "2,1"; } > short.csv
	run -1 --separate-stderr graphplot short.csv
	[ "$stderr" = "graphplot: short.csv: line 5: 2 fields, the header has 18" ]
	[ ! -e out.svg ]
	printf '%s\n' "$STAT_HEADER" > head.csv
	run -1 --separate-stderr graphplot head.csv
	[ "$stderr" = "graphplot: head.csv: no rows to draw" ]
}

@test "graphplot: a write error is an error" {
	mkstat > s.csv
	run -1 --separate-stderr bash -c 'graphplot "$1" > /dev/full' _ s.csv
	[[ $stderr == "graphplot: stdout: write error: "* ]]
}

@test "graphplot: stdin gives the same as the file operand" {
	mkstat > s.csv
	graphplot s.csv > a.svg
	graphplot < s.csv > b.svg
	cmp a.svg b.svg
}

@test "graphplot: the breakdown is stacked bars scaled to the longest, the job's alone unless --all" {
	mkstat > s.csv
	run -0 --separate-stderr graphplot s.csv
	[ -z "$stderr" ]
	# the job's row alone: one bar, its four segments; the plot is 640 -
	# 150 - 24 = 466 px wide for an axis of 10 ms (ticks of 2): compute
	# 4 ms is 186.4 px from x 150, overlapped 46.6, comm 139.8, other 93.2
	[ "$(grep -c '<rect x=[^>]*height="18"' <<< "$output")" -eq 4 ]
	grep -q '<rect x="150.00" y="[0-9]*" width="186.40" height="18" fill="#4e79a7"><title>exposed compute: 4.000 ms</title>' <<< "$output"
	grep -q '<rect x="336.40" y="[0-9]*" width="46.60" height="18" fill="#59a14f">' <<< "$output"
	grep -q 'width="93.20" height="18" fill="#bab0ac"><title>other: 2.000 ms</title>' <<< "$output"
	grep -q '>job, iter 1</text>' <<< "$output"
	run -0 graphplot --all s.csv
	# three bars: 4 + 1 (rank 1's compute alone) + 4 segments
	[ "$(grep -c '<rect x=[^>]*height="18"' <<< "$output")" -eq 9 ]
	grep -q '>rank 1, iter 1</text>' <<< "$output"
	grep -q 'width="233.00" height="18" fill="#4e79a7"><title>exposed compute: 5.000 ms' <<< "$output"
}

@test "graphplot: the critical path's CSV is one bar per iteration, by kind" {
	cat > c.csv <<-'EOF'
	rank,iteration,task,kind,start_ns,end_ns,duration_ns,path,name
	1,1,-,idle,0,25,25000000,job,""
	1,1,2,host,25,35,10000000,job,"step, with a comma"
	0,1,1,communication,35,55,20000000,job,"nccl"
	EOF
	run -0 graphplot c.csv
	# 55 ms on an axis of 60 (ticks of 10): 466 px for 60 ms
	grep -q '<title>idle: 25.000 ms</title>' <<< "$output"
	grep -q 'width="77.67" height="18" fill="#f28e2b"><title>host: 10.000 ms' <<< "$output"
	grep -q '>job, iter 1</text>' <<< "$output"
	grep -q '>60</text>' <<< "$output"
}

@test "graphplot: utilization is a line per series, or the ranks' mean" {
	cat > u.csv <<-'EOF'
	rank,iteration,view,window_ms,busy
	0,1,measured,0.000,0.5000
	0,1,measured,1.000,1.0000
	EOF
	run -0 graphplot u.csv
	# the plot's top at 58 + 18 (one legend row) = 76, 220 px for 100 %:
	# busy 0.5 at 76 + 110 = 186, 1.0 at 76; x from 150, 1 ms at the
	# axis' end, 640 - 24 = 616
	[ "$(grep -c '<polyline' <<< "$output")" -eq 1 ]
	grep -q 'points="150.0,186.0 616.0,76.0"' <<< "$output"
	for r in 1 2 3 4 5; do printf '%s,1,simulated,0.000,%s\n' "$r" "0.$r"; done > many
	{ echo rank,iteration,view,window_ms,busy; cat many; } > m.csv
	run -0 graphplot m.csv
	# five ranks: their mean, (0.1 + ... + 0.5) / 5 = 0.3, one line, at
	# 76 + 220 - 66 = 230, dashed (simulated)
	[ "$(grep -c '<polyline' <<< "$output")" -eq 1 ]
	grep -q 'stroke-dasharray="5,3" points="150.0,230.0"' <<< "$output"
	grep -q '>iter 1, simulated</text>' <<< "$output"
	run -0 graphplot --all m.csv
	[ "$(grep -c '<polyline' <<< "$output")" -eq 5 ]
}

@test "graphplot: a pipelines sweep is a bar per point, labelled by its values" {
	{ echo "dp,pp,layers,$STAT_HEADER"; echo "2,4,24,job,10,,100,,50,10,30,10,,,,,,1.0,1,,"; } > sw.csv
	run -0 graphplot sw.csv
	grep -q '>dp 2, pp 4, layers 24</text>' <<< "$output"
}

# A sweep over dp (1, 2, 4; given out of order), three iterations a
# point: dp D's job steps are 100/D + 1, + 2, + 3 ms (compute 100/D ms,
# other 1 to 3 ms), MFU 0.30 + D/100 and + 0.01, + 0.02; a rank row that
# is not the job's, left out; the base (dp 1) measured 102 ms.
mksweep() {
	H="$STAT_HEADER,peak_allocated_bytes,peak_reserved_bytes,predicted_peak_bytes,device_memory_bytes,fits,unprofiled_ns,profiler_cost,tokens_per_s,tflops_per_gpu,mfu"
	echo "dp,pp,$H"
	for d in 4 1 2; do
		for i in 3 1 2; do
			c=$((100000000 / d)) o=$((i * 1000000)) meas=
			[ "$d" = 1 ] && meas=$((c + 2000000))
			echo "$d,2,job,$i,$meas,$((c + o)),,$c,0,0,$o,,,,,,,1,,,,,,,,,,1000.0,100.000,0.$((30 + d + i - 1))00"
		done
		echo "$d,2,0,1,,999000000,,999000000,0,0,0,,,,,,,1,,,,,,,,,,,,"
	done
}

@test "graphplot: a sweep's bar is its point's median iteration, with the iterations' range" {
	mksweep > sw.csv
	run -0 --separate-stderr graphplot sw.csv
	[ -z "$stderr" ]
	# three bars, not nine, nor the ranks' rows
	[ "$(grep -c '>dp [124], pp 2</text>' <<< "$output")" -eq 3 ]
	# dp 4: compute 25 ms, the median iteration's other 2 ms; range 26 to 28
	grep -q '<title>exposed compute: 25.000 ms</title>' <<< "$output"
	grep -q '<title>3 iterations: 26.000 to 28.000 ms</title>' <<< "$output"
	grep -q '<title>3 iterations: 101.000 to 103.000 ms</title>' <<< "$output"
	[ "$(grep -c '<title>other: 2.000 ms</title>' <<< "$output")" -eq 3 ]
}

@test "graphplot: --against draws a sweep's median step and MFU against a column, a point per configuration" {
	mksweep > sw.csv
	run -0 --separate-stderr graphplot --against dp sw.csv
	[ -z "$stderr" ]
	# a point a configuration in each panel: 3 steps, 3 MFU
	[ "$(grep -c '<circle' <<< "$output")" -eq 6 ]
	# medians and ranges: dp 1 102 ms (101 to 103), MFU 32 % (31 to 33)
	grep -q '<title>dp 1, pp 2: 102.000 ms (3 iterations, 101.000 to 103.000)</title>' <<< "$output"
	grep -q '<title>dp 4, pp 2: 35.000 % (3 iterations, 34.000 to 36.000)</title>' <<< "$output"
	# the measured base, hollow: 102 ms
	grep -q '<title>measured: 102.000 ms</title>' <<< "$output"
	# x in ascending order: 1, 2, 4 left to right
	[ "$(grep -o '<text x="[0-9.]*" y="[0-9]*" text-anchor="middle">[124]</text>' <<< "$output" |
		sed 's/.*">//; s/<.*//' | tr -d '\n')" = 124 ]
	grep -q '>MFU, %</text>' <<< "$output"
	read -r w h colours < <(render_out)
	[ "$w" -ge 640 ] && [ "$colours" -gt 20 ]
}

@test "graphplot: --against names a sweep's column, else it is an error" {
	mksweep > sw.csv
	run -1 --separate-stderr graphplot --against layers sw.csv
	[ -z "$output" ]
	[ "$stderr" = "graphplot: sw.csv: --against layers: not a column of a pipelines sweep" ]
	mkstat > s.csv
	run -1 --separate-stderr graphplot --against dp s.csv
	[ "$stderr" = "graphplot: s.csv: --against dp: not a column of a pipelines sweep" ]
}

@test "graphplot: a long label widens the labels' column and the picture, never cut off" {
	{ echo "dp,hidden_size_of_the_model,pipeline_schedule_name,$STAT_HEADER"
	  echo "8,16384,interleaved-1f1b-with-a-long-name,job,1,,100,,50,10,30,10,,,,,,,1,,"; } > long.csv
	run -0 graphplot long.csv
	# N characters at 7.6 px, right-aligned at the column's edge less 6:
	# the column starts 12 px in; the plot keeps its 490 px to the right
	label="dp 8, hidden_size_of_the_model 16384, pipeline_schedule_name interleaved-1f1b-with-a-long-name"
	n=${#label}
	left=$(( 12 + (n * 76 + 9) / 10 ))
	grep -q "<text x=\"$((left - 6))\" y=\"[0-9]*\" text-anchor=\"end\">$label</text>" <<< "$output"
	grep -q "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"$((left + 490))\"" <<< "$output"
}

@test "graphplot: every picture of the DLRM job renders to PNG" {
	need_traces
	kineto2graph -q "$TRACES"/param_dlrm_8rank_v100/kineto/*.json.gz | graph-deps --merge 2> /dev/null | graphsim > job.kg
	graphstat --csv --util u.csv job.kg > s.csv
	graphstat --critical --csv job.kg > c.csv
	graphplot --all -o b.svg s.csv
	graphplot -o u.svg u.csv
	graphplot -o c.svg c.csv
	for f in b u c; do
		read -r w h colours < <(render $f.svg)
		# 640 wide; drawn: the bars' colours and anti-aliased text
		[ "$w" -eq 640 ] && [ "$h" -gt 100 ] && [ "$colours" -gt 50 ]
	done
}
