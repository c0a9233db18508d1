#!/usr/bin/env bats
# pipelines/: the sweep grid on tracegen's tiny job (tp 2, pp 2, dp 2, 4
# layers, 2 iterations numbered from 10, ranks 4-7 on a second node:
# tracegen(1)); its CSV against the pipeline run by hand; the cache's
# keys, reuse and failures; the PP and layer steps' plumbing with
# stand-in tools, and with the real ones once they exist.

load helpers

bats_require_minimum_version 1.5.0

TINY='--preset tiny --jobs 1'

# The sweep, in the test's folder, as a user runs it: not as a sub-make
# of `make check` (its flags and jobserver stay out). graph-scale-dp
# needs --net for the tiny job from dp 3 on (its pipeline sends cross
# nodes, its data-parallel all-reduces never do).
sweep() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES \
	    make -s -j2 -C "$ROOT/pipelines" CACHE="$PWD/cache" WORK="$PWD/work" \
	    OUT="$PWD/sweep.csv" "$@"
}

# Wrappers for the tools in tools/, each noting in ./calls its name and
# arguments when it does more than tell its --version, then running the
# real one: what ran, seen from outside the sweep.
wrap() {
	mkdir -p tools
	for t in "$@"; do
		printf '#!/bin/sh\n[ "$1" = --version ] || echo %s "$@" >> "%s/calls"\nexec "%s/bin/%s" "$@"\n' \
		    "$t" "$PWD" "$ROOT" "$t" > "tools/$t"
		chmod +x "tools/$t"
	done
}
wrap_all() {
	wrap tracegen kineto2graph graph-deps graphcat graph-scale-dp graphsim graphstat
}

# The steps of this run that ran (LABEL per line), and those found cached.
ran() { awk '$1 == "run" { print $2 }' work/steps.log | sort; }
hits() { awk '$1 == "hit" { print $2 }' work/steps.log | sort; }
key_of() { awk -v l="$1" '$2 == l { k = $3 } END { print k }' work/steps.log; }

# The job rows of graphstat --csv for a graph stream, prefixed by PREFIX,
# against base.kg (the sweep's --base).
job_rows() { # PREFIX
	graphsim | graphstat --csv --base base.kg | awk -F, -v p="$1" '$1 == "job" { print p "," $0 }'
}

@test "pipelines: a DP sweep with -j2 gives the job rows of every point, as the pipeline run by hand does" {
	run -0 --separate-stderr sweep TRACEGEN="$TINY" DP='1 2 4' NET=50,5
	[ "$output" = "sweep: $PWD/sweep.csv: 3 points" ]
	# nothing on stderr but graph-scale-dp's word that at dp 4 the
	# pipeline's sends cross nodes, where --net's 5 us a step is less than
	# the job's own NVLink fit (13 us): they take less time
	if grep -v "^graph-scale-dp: warning: .*: section 0: 128 collectives of groups other than the data-parallel one take less time with 4 replicas: " <<< "$stderr" | grep -q .; then return 1; fi
	# Three points, two iterations each; pp 2 and 4 layers found in the
	# traces and the graph.
	run -0 cut -d, -f1-5 sweep.csv
	[ "${#lines[@]}" -eq 7 ]
	[ "${lines[1]}" = "1,2,4,job,10" ]
	[ "${lines[2]}" = "1,2,4,job,11" ]
	[ "${lines[3]}" = "2,2,4,job,10" ]
	[ "${lines[4]}" = "2,2,4,job,11" ]
	[ "${lines[5]}" = "4,2,4,job,10" ]
	[ "${lines[6]}" = "4,2,4,job,11" ]
	# By hand: dp 2 is the base's own degree, so no graph-scale-dp.
	tracegen --preset tiny --jobs 1 -d job
	kineto2graph job/*.json.gz | graph-deps --merge > base.kg
	{
		head -1 sweep.csv
		graph-scale-dp --net 50,5 1 base.kg | job_rows 1,2,4
		job_rows 2,2,4 < base.kg
		graph-scale-dp --net 50,5 4 base.kg | job_rows 4,2,4
	} > expected.csv
	[ "$(head -1 sweep.csv)" = "dp,pp,layers,$(graphsim base.kg | graphstat --csv | sed -n 1p)" ]
	cmp sweep.csv expected.csv
	# each point's step without the profiler (its cost estimated)
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$c["unprofiled_ns"] == "" || $c["profiler_cost"] != "estimated" { bad = 1 } END { exit bad }' sweep.csv
	# The base merged once for the three points, dp 2 no step of its own.
	[ "$(ran | tr '\n' ' ')" = "base base-dp1 base-dp4 base-layers dp1-pp2-l4 dp2-pp2-l4 dp4-pp2-l4 traces " ]
}

@test "pipelines: a second run finds every step cached and runs no tool" {
	wrap_all
	sweep BIN="$PWD/tools" TRACEGEN="$TINY" DP='1 2 4' NET=50,5
	[ -s calls ]
	cp sweep.csv first.csv
	ls -l --time-style=full-iso cache > first.ls
	: > work/steps.log
	rm calls
	run -0 --separate-stderr sweep BIN="$PWD/tools" TRACEGEN="$TINY" DP='1 2 4' NET=50,5
	[ ! -e calls ]
	[ -z "$(ran)" ]
	# traces, base, base-layers, base-dp1, base-dp4, and the stats of 3 points
	[ "$(hits | wc -l)" -eq 8 ]
	ls -l --time-style=full-iso cache | cmp - first.ls
	cmp sweep.csv first.csv
}

@test "pipelines: a sweep that shares a prefix with an earlier one runs only its new steps" {
	wrap_all
	sweep BIN="$PWD/tools" TRACEGEN="$TINY" DP='1 2' NET=50,5
	: > work/steps.log
	rm calls
	sweep BIN="$PWD/tools" TRACEGEN="$TINY" DP='2 4' NET=50,5
	[ "$(ran | tr '\n' ' ')" = "base-dp4 dp4-pp2-l4 " ]
	run -0 sort calls
	[ "${#lines[@]}" -eq 3 ]
	[ "${lines[0]}" = "graph-scale-dp --net 50,5 4 $(cat work/ref/base.ref)" ]
	[ "${lines[1]}" = "graphsim $(cat work/ref/base-dp4.ref)" ]
	[ "${lines[2]}" = "graphstat --csv --base $(cat work/ref/base.ref)" ]
	[ "$(cut -d, -f1 sweep.csv | uniq | tr '\n' ' ')" = "dp 2 4 " ]
}

@test "pipelines: another --version of a tool gives its steps other keys" {
	mkdir tools
	echo 'graph-scale-dp (kgraph) 0.1' > version
	printf '#!/bin/sh\n[ "$1" = --version ] && exec cat "%s/version"\nexec graph-scale-dp "$@"\n' \
	    "$PWD" > tools/graph-scale-dp
	chmod +x tools/graph-scale-dp
	sweep SCALE_DP="$PWD/tools/graph-scale-dp" KEY_BINARY=no TRACEGEN="$TINY" DP=1
	k1=$(key_of base-dp1)
	grep -qx 'tool graph-scale-dp graph-scale-dp (kgraph) 0.1' "cache/$k1.key"
	echo 'graph-scale-dp (kgraph) 0.2' > version
	: > work/steps.log
	sweep SCALE_DP="$PWD/tools/graph-scale-dp" KEY_BINARY=no TRACEGEN="$TINY" DP=1
	k2=$(key_of base-dp1)
	[ -n "$k2" ] && [ "$k2" != "$k1" ]
	[ "$(ran | tr '\n' ' ')" = "base-dp1 " ]
	grep -qx 'tool graph-scale-dp graph-scale-dp (kgraph) 0.2' "cache/$k2.key"
	# The same bytes came out: the points' stats are the cached ones.
	cmp "cache/$k1.kg" "cache/$k2.kg"
}

@test "pipelines: another argument gives its step another key, the steps before it stay cached" {
	sweep TRACEGEN="$TINY" DP=4 NET=50,5
	k1=$(key_of base-dp4)
	: > work/steps.log
	sweep TRACEGEN="$TINY" DP=4 NET=40,5
	k2=$(key_of base-dp4)
	[ -n "$k2" ] && [ "$k2" != "$k1" ]
	[ "$(ran | tr '\n' ' ')" = "base-dp4 dp4-pp2-l4 " ]
	grep -qx 'arg 40,5' "cache/$k2.key"
	grep -qx 'arg 50,5' "cache/$k1.key"
}

@test "pipelines: the tool's executable is in its key, unless KEY_BINARY=no" {
	mkdir tools
	printf '#!/bin/sh\nexec graph-scale-dp "$@"\n' > tools/graph-scale-dp
	chmod +x tools/graph-scale-dp
	sweep SCALE_DP="$PWD/tools/graph-scale-dp" TRACEGEN="$TINY" DP=1
	k1=$(key_of base-dp1)
	sweep SCALE_DP="$PWD/tools/graph-scale-dp" KEY_BINARY=no TRACEGEN="$TINY" DP=1
	k2=$(key_of base-dp1)
	[ "$k2" != "$k1" ]
	echo '# another build' >> tools/graph-scale-dp
	: > work/steps.log
	sweep SCALE_DP="$PWD/tools/graph-scale-dp" KEY_BINARY=no TRACEGEN="$TINY" DP=1
	[ "$(key_of base-dp1)" = "$k2" ]
	[ -z "$(ran)" ]
	sweep SCALE_DP="$PWD/tools/graph-scale-dp" TRACEGEN="$TINY" DP=1
	k3=$(key_of base-dp1)
	[ "$k3" != "$k1" ] && [ "$k3" != "$k2" ]
	[ "$(ran | tr '\n' ' ')" = "base-dp1 " ]
}

@test "pipelines: a failing step leaves no cached output, no CSV, and make exits 2" {
	mkdir tools
	printf '#!/bin/sh\n[ "$1" = --version ] && exec graph-scale-dp --version\nprintf half-written\nexit 1\n' \
	    > tools/graph-scale-dp
	chmod +x tools/graph-scale-dp
	run -2 --separate-stderr sweep SCALE_DP="$PWD/tools/graph-scale-dp" TRACEGEN="$TINY" DP='1 2'
	[[ $stderr == *"step: base-dp1: failed (status 1)"* ]]
	k=$(key_of base-dp1)
	[ -n "$k" ]
	[ ! -e "cache/$k.kg" ] && [ ! -e "cache/$k.key" ]
	[ -z "$(find cache -name '*tmp*')" ]
	[ ! -e work/ref/base-dp1.ref ]
	[ ! -e sweep.csv ]
	# The real tool, next: header and 2 points of 2 iterations.
	: > work/steps.log
	run -0 --separate-stderr sweep TRACEGEN="$TINY" DP='1 2'
	ran | grep -qx base-dp1
	[ "$(wc -l < sweep.csv)" -eq 5 ]
}

@test "pipelines: an interrupted step leaves no file that looks complete" {
	printf '#!/bin/sh\n[ "$1" = --version ] && { echo slow 1; exit 0; }\nprintf half-written\ntouch "%s/started"\nexec sleep 60\n' \
	    "$PWD" > slow
	chmod +x slow
	setsid "$ROOT/pipelines/step" -q -c cache -L slow -- ./slow > out 2> err &
	pid=$!
	for _ in $(seq 100); do
		[ -e started ] && break
		sleep 0.1
	done
	[ -e started ]
	kill -TERM -- -"$pid"
	status=0
	wait "$pid" || status=$?
	[ "$status" -eq 143 ]
	[ -z "$(ls -A cache)" ]
	[ ! -s out ]
}

@test "pipelines: a folder of traces is keyed by their names and bytes, not by the folder" {
	wrap_all
	sweep BIN="$PWD/tools" TRACEGEN="$TINY"
	cp -r "$(sed -n 's/^BASE_TRACES := //p' work/base.mk)" job
	rm calls
	: > work/steps.log
	run -0 --separate-stderr sweep BIN="$PWD/tools" BASE="$PWD/job"
	[ "$output" = "sweep: $PWD/sweep.csv: 1 points" ]
	# Nothing ran: the merged graph, and so the point's stats, are cached.
	[ ! -e calls ]
	[ "$(hits | tr '\n' ' ')" = "base base-layers dp2-pp2-l4 " ]
	[ "$(cut -d, -f1-5 sweep.csv | tail -1)" = "2,2,4,job,11" ]
	# Another name is another key: the base's, and the point's stats,
	# which name the base's graph (graphstat --base CACHE/KEY.kg)
	mv job/rank-7.json.gz job/rank-7.trace.json.gz
	: > work/steps.log
	sweep BIN="$PWD/tools" BASE="$PWD/job"
	[ "$(ran | tr '\n' ' ')" = "base dp2-pp2-l4 " ]
}

@test "pipelines: a DP axis on a base whose traces do not tell its degree asks for BASE_DP" {
	tracegen --preset tiny --jobs 1 -d tiny
	mkdir job
	for f in tiny/*.json.gz; do
		gzip -dc "$f" | jq -c 'del(.distributedInfo)' | gzip -1 > "job/${f##*/}"
	done
	run -2 --separate-stderr sweep BASE="$PWD/job" DP=1
	[[ $stderr == *"the base's data-parallel degree is not in its traces: give BASE_DP=N"* ]]
	[ ! -e sweep.csv ]
	run -0 --separate-stderr sweep BASE="$PWD/job" DP=1 BASE_DP=2
	# pp unknown and not asked for: an empty column; 4 layers from the graph.
	run -0 cut -d, -f1-5 sweep.csv
	[ "${lines[1]}" = "1,,4,job,10" ]
	[ "${lines[2]}" = "1,,4,job,11" ]
	# Values given win over those found, and the layers are not counted.
	: > work/steps.log
	run -0 --separate-stderr sweep BASE="$PWD/job" DP=1 BASE_DP=2 BASE_PP=3 BASE_LAYERS=6
	[ "$(cut -d, -f1-5 sweep.csv | sed -n 2p)" = "1,3,6,job,10" ]
	[ "$(grep -c base-layers work/steps.log)" -eq 0 ]
}

@test "pipelines: no base, both bases, or an axis value that is no count are usage errors" {
	run -2 --separate-stderr sweep DP=1
	[[ $stderr == *"give the base: BASE=FOLDER or TRACEGEN='OPTIONS'"* ]]
	run -2 --separate-stderr sweep BASE=x TRACEGEN="$TINY"
	[[ $stderr == *"give BASE or TRACEGEN, not both"* ]]
	run -2 --separate-stderr sweep TRACEGEN="$TINY" DP='1 x2'
	[[ $stderr == *"DP: x2 is not a count"* ]]
	run -2 --separate-stderr sweep BASE="$PWD/nothing"
	[[ $stderr == *"base: $PWD/nothing: no such folder"* ]]
	[ ! -e sweep.csv ]
}

@test "pipelines: the PP and layer steps get their point's arguments and are skipped at the base's values (stand-in tools)" {
	# Stand-ins that note their arguments and pass the graph through.
	mkdir tools
	for t in graph-scale-pp graph-scale-layers; do
		printf '#!/bin/sh\n[ "$1" = --version ] && { echo "%s (stand-in) 0"; exit 0; }\necho %s "$@" >> "%s/calls"\nfor a; do f=$a; done\nexec cat "$f"\n' \
		    "$t" "$t" "$PWD" > "tools/$t"
		chmod +x "tools/$t"
	done
	# -j1: the two layer steps below have the same key, and run in order.
	run -0 --separate-stderr sweep -j1 SCALE_PP="$PWD/tools/graph-scale-pp" \
	    SCALE_LAYERS="$PWD/tools/graph-scale-layers" PP_OPTS=-q \
	    TRACEGEN="$TINY" PP='2 4' LAYERS='4 8' DP='2 1' MICROBATCHES=8 SCHEDULE=gpipe
	[ "$output" = "sweep: $PWD/sweep.csv: 8 points" ]
	base=$(cat work/ref/base.ref)
	# MICROBATCHES and SCHEDULE given: a PP step at the base's 2 too, each
	# once for its four points; layers 8 once for each PP step's two
	# points, but the stand-in's two outputs are the base's bytes: one
	# key, run once.
	run -0 sort calls
	[ "${#lines[@]}" -eq 3 ]
	[ "${lines[0]}" = "graph-scale-layers 8 $(cat work/ref/pp2-mb8-sgpipe.ref)" ]
	[ "${lines[1]}" = "graph-scale-pp -q --microbatches 8 --schedule gpipe 2 $base" ]
	[ "${lines[2]}" = "graph-scale-pp -q --microbatches 8 --schedule gpipe 4 $base" ]
	[ "$(key_of pp4-mb8-sgpipe-l8)" = "$(key_of pp2-mb8-sgpipe-l8)" ]
	grep -qx "hit pp4-mb8-sgpipe-l8 $(key_of pp2-mb8-sgpipe-l8)" work/steps.log
	# No layers step at 4, no DP step at 2.
	[ "$(ran | grep -c -- '-l4$')" -eq 0 ]
	[ "$(ran | grep -c -- '-dp2$')" -eq 0 ]
	[ "$(head -1 sweep.csv | cut -d, -f1-7)" = "dp,pp,layers,microbatches,schedule,rank,iteration" ]
	[ "$(awk -F, 'NR > 1 && $7 == 10 { print $1 $2 $3 $4 $5 }' sweep.csv | tr '\n' ' ')" = \
	    "2248gpipe 1248gpipe 2288gpipe 1288gpipe 2448gpipe 1448gpipe 2488gpipe 1488gpipe " ]
}

@test "pipelines: ROWS=all keeps every rank's rows as well as the job's" {
	run -0 --separate-stderr sweep TRACEGEN="$TINY" ROWS=all
	# 8 ranks and the job, 2 iterations each
	[ "$(wc -l < sweep.csv)" -eq 19 ]
	tracegen --preset tiny --jobs 1 -d job
	kineto2graph job/*.json.gz | graph-deps --merge > base.kg
	graphsim base.kg | graphstat --csv --base base.kg |
	    awk 'NR > 1 { print "2,2,4," $0 }' > expected
	[ "$(tail -n +2 sweep.csv)" = "$(cat expected)" ]
}

@test "pipelines: a PP sweep with bin/graph-scale-pp gives the rows of the pipeline run by hand" {
	[ -x "$ROOT/bin/graph-scale-pp" ] || skip "no bin/graph-scale-pp yet"
	# (at 4 stages the model-parallel group spans both nodes of 8: the
	# network is given)
	run -0 --separate-stderr sweep TRACEGEN="$TINY" PP='1 2 4' PP_OPTS='--net 50,5'
	[ "$output" = "sweep: $PWD/sweep.csv: 3 points" ]
	[ "$(ran | grep '^pp' | tr '\n' ' ')" = "pp1 pp4 " ]
	tracegen --preset tiny --jobs 1 -d job
	kineto2graph job/*.json.gz | graph-deps --merge > base.kg
	{
		head -1 sweep.csv
		graph-scale-pp --net 50,5 1 base.kg | job_rows 2,1,4
		job_rows 2,2,4 < base.kg
		graph-scale-pp --net 50,5 4 base.kg | job_rows 2,4,4
	} > expected.csv
	cmp sweep.csv expected.csv
}

@test "pipelines: a layers sweep with bin/graph-scale-layers gives the rows of the pipeline run by hand" {
	[ -x "$ROOT/bin/graph-scale-layers" ] || skip "no bin/graph-scale-layers yet"
	run -0 --separate-stderr sweep TRACEGEN="$TINY" LAYERS='2 4 8'
	[ "$output" = "sweep: $PWD/sweep.csv: 3 points" ]
	[ "$(ran | grep -x 'base-l[0-9]*' | tr '\n' ' ')" = "base-l2 base-l8 " ]
	tracegen --preset tiny --jobs 1 -d job
	kineto2graph job/*.json.gz | graph-deps --merge > base.kg
	{
		head -1 sweep.csv
		graph-scale-layers 2 base.kg | job_rows 2,2,2
		job_rows 2,2,4 < base.kg
		graph-scale-layers 8 base.kg | job_rows 2,2,8
	} > expected.csv
	cmp sweep.csv expected.csv
}

@test "pipelines: a HIDDEN axis with bin/graph-scale-hidden gives the rows of the pipeline run by hand" {
	# the tiny job's hidden size is 256 (tensor-parallel shares of 2):
	# BASE_HIDDEN tells the sweep so, and that point runs no step
	run -0 --separate-stderr sweep TRACEGEN="$TINY" HIDDEN='256 512' BASE_HIDDEN=256 \
	    HIDDEN_OPTS=-q LAYERS='4 8'
	[ "$output" = "sweep: $PWD/sweep.csv: 4 points" ]
	[ "$(ran | grep '^base' | tr '\n' ' ')" = "base base-h512 base-h512-l8 base-l8 base-layers " ]
	[ "$(head -1 sweep.csv | cut -d, -f1-5)" = "dp,pp,layers,hidden,rank" ]
	tracegen --preset tiny --jobs 1 -d job
	kineto2graph job/*.json.gz | graph-deps --merge > base.kg
	{
		head -1 sweep.csv
		job_rows 2,2,4,256 < base.kg
		graph-scale-layers 8 base.kg | job_rows 2,2,8,256
		graph-scale-hidden -q 512 base.kg | job_rows 2,2,4,512
		graph-scale-hidden -q 512 base.kg | graph-scale-layers 8 | job_rows 2,2,8,512
	} > expected.csv
	cmp sweep.csv expected.csv
	# without BASE_HIDDEN, 256 is a step of its own: the identity
	run -0 --separate-stderr sweep TRACEGEN="$TINY" HIDDEN=256 HIDDEN_OPTS=-q OUT="$PWD/id.csv"
	[ "$(ran | grep -c -x 'base-h256')" -eq 1 ]
	[ "$(cut -d, -f1-4,8 id.csv | sed 1d)" = "$(cut -d, -f1-4,8 sweep.csv | sed 1d | head -2)" ]
}

@test "pipelines: SEQ and MBS axes with bin/graph-scale-batch give the rows of the pipeline run by hand" {
	# the tiny job's sequence is 128 and its micro-batch 1: BASE_SEQ tells
	# the sweep the one; MBS=1 without BASE_MBS is a step (the identity)
	run -0 --separate-stderr sweep TRACEGEN="$TINY" SEQ='128 256' MBS='1 2' BASE_SEQ=128 \
	    BATCH_OPTS=-q LAYERS='4 8'
	[ "$output" = "sweep: $PWD/sweep.csv: 8 points" ]
	[ "$(ran | grep '^base' | tr '\n' ' ')" = "base base-layers base-mbs1 base-mbs1-l8 base-mbs2 base-mbs2-l8 base-seq256-mbs1 base-seq256-mbs1-l8 base-seq256-mbs2 base-seq256-mbs2-l8 " ]
	[ "$(head -1 sweep.csv | cut -d, -f1-6)" = "dp,pp,layers,seq,mbs,rank" ]
	tracegen --preset tiny --jobs 1 -d job
	kineto2graph job/*.json.gz | graph-deps --merge > base.kg
	{
		head -1 sweep.csv
		graph-scale-batch -q --mbs 1 base.kg | job_rows 2,2,4,128,1
		graph-scale-batch -q --mbs 1 base.kg | graph-scale-layers 8 | job_rows 2,2,8,128,1
		graph-scale-batch -q --mbs 2 base.kg | job_rows 2,2,4,128,2
		graph-scale-batch -q --mbs 2 base.kg | graph-scale-layers 8 | job_rows 2,2,8,128,2
		graph-scale-batch -q --seq 256 --mbs 1 base.kg | job_rows 2,2,4,256,1
		graph-scale-batch -q --seq 256 --mbs 1 base.kg | graph-scale-layers 8 | job_rows 2,2,8,256,1
		graph-scale-batch -q --seq 256 --mbs 2 base.kg | job_rows 2,2,4,256,2
		graph-scale-batch -q --seq 256 --mbs 2 base.kg | graph-scale-layers 8 | job_rows 2,2,8,256,2
	} > expected.csv
	cmp sweep.csv expected.csv
	# twice the tokens is slower; BASE_MBS=1 leaves the identity's step out
	t1=$(awk -F, '$4 == 128 && $5 == 1 && $3 == 4 { print $9; exit }' sweep.csv)
	t2=$(awk -F, '$4 == 128 && $5 == 2 && $3 == 4 { print $9; exit }' sweep.csv)
	[ "$t2" -gt "$t1" ]
	n=$(wc -l < work/steps.log)
	run -0 --separate-stderr sweep TRACEGEN="$TINY" MBS='1 2' BASE_MBS=1 BATCH_OPTS=-q OUT="$PWD/m.csv"
	[ "$(sed "1,${n}d" work/steps.log | awk '{ print $2 }' | grep '^base' | sort | tr '\n' ' ')" = "base base-layers base-mbs2 " ]
	[ "$(head -1 m.csv | cut -d, -f1-5)" = "dp,pp,layers,mbs,rank" ]
	# a size of 0 is refused by make before any step
	run -2 --separate-stderr sweep TRACEGEN="$TINY" MBS='0 2'
	[[ $stderr == *"SEQ, MBS: 0 is not a size"* ]]
}

@test "pipelines: PP, layers and DP together with the real tools share their prefixes" {
	[ -x "$ROOT/bin/graph-scale-pp" ] || skip "no bin/graph-scale-pp yet"
	[ -x "$ROOT/bin/graph-scale-layers" ] || skip "no bin/graph-scale-layers yet"
	run -0 --separate-stderr sweep TRACEGEN="$TINY" PP='2 4' LAYERS='4 8' DP='1 2' NET=50,5 \
	    PP_OPTS='--net 50,5'
	[ "$output" = "sweep: $PWD/sweep.csv: 8 points" ]
	# Each node once (run, or found cached when two come to the same
	# bytes): a PP and a layers step, a DP step after each of the four
	# graphs before it (pp4, pp4-l8, base-l8 and base).
	[ "$(awk '{ print $2 }' work/steps.log | grep -v '^dp' | sort | tr '\n' ' ')" = \
	    "base base-dp1 base-l8 base-l8-dp1 base-layers pp4 pp4-dp1 pp4-l8 pp4-l8-dp1 traces " ]
	tracegen --preset tiny --jobs 1 -d job
	kineto2graph job/*.json.gz | graph-deps --merge > base.kg
	graph-scale-pp --net 50,5 4 base.kg | graph-scale-layers 8 | graph-scale-dp --net 50,5 1 |
	    job_rows 1,4,8 > expected
	[ "$(grep '^1,4,8,' sweep.csv)" = "$(cat expected)" ]
}

@test "pipelines: a SIGKILLed step's temporary files are removed by the next step and by make clean" {
	# the leftovers of a step killed outright: its output and manifest
	# under a PID no process has (beyond the kernel's pid_max), and a
	# running step's (this shell's PID), which must stay
	mkdir cache
	for pid in 2147483646 $$; do
		mkdir "cache/.0123456789abcdef.dir.tmp.$pid"
		printf 'half' > "cache/.0123456789abcdef.kg.tmp.$pid"
		printf 'key' > "cache/.0123456789abcdef.kg.tmp.$pid.key"
	done
	printf '#!/bin/sh\n[ "$1" = --version ] && { echo t 1; exit 0; }\necho out\n' > t
	chmod +x t
	run -0 --separate-stderr "$ROOT/pipelines/step" -q -c cache -L t -- ./t
	[ "$(cd cache && ls -A | grep tmp | sort | paste -sd' ')" = \
	    ".0123456789abcdef.dir.tmp.$$ .0123456789abcdef.kg.tmp.$$ .0123456789abcdef.kg.tmp.$$.key" ]
	printf 'x' > sweep.csv.tmp.2147483646
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES \
	    make -s -C "$ROOT/pipelines" CACHE="$PWD/cache" WORK="$PWD/work" OUT="$PWD/sweep.csv" clean
	[ -z "$(cd cache && ls -A | grep tmp)" ]
	[ ! -e sweep.csv.tmp.2147483646 ]
	# the step's own output stayed
	[ "$(ls cache | grep -c '\.kg$')" -eq 1 ]
}

@test "pipelines: a TP sweep with bin/graph-scale-tp gives the rows of the pipeline run by hand, the base's degree found" {
	[ -x "$ROOT/bin/graph-scale-tp" ] || skip "no bin/graph-scale-tp yet"
	# the tiny job is tp 2 (its TENSOR_MODEL_PARALLEL_GROUP): that point
	# is the base's graph, the others one graph-scale-tp step each
	run -0 --separate-stderr sweep TRACEGEN="$TINY" TP='1 2 4' TP_OPTS=-q
	[ "$output" = "sweep: $PWD/sweep.csv: 3 points" ]
	grep -qx 'FOUND_TP := 2' work/base.mk
	[ "$(ran | grep -x 'base-tp[0-9]*' | tr '\n' ' ')" = "base-tp1 base-tp4 " ]
	[ "$(head -1 sweep.csv | cut -d, -f1-5)" = "dp,pp,layers,tp,rank" ]
	tracegen --preset tiny --jobs 1 -d job
	kineto2graph job/*.json.gz | graph-deps --merge > base.kg
	{
		head -1 sweep.csv
		graph-scale-tp -q 1 base.kg | job_rows 2,2,4,1
		job_rows 2,2,4,2 < base.kg
		graph-scale-tp -q 4 base.kg | job_rows 2,2,4,4
	} > expected.csv
	cmp sweep.csv expected.csv
	# a second run finds them cached
	: > work/steps.log
	run -0 --separate-stderr sweep TRACEGEN="$TINY" TP='1 2 4' TP_OPTS=-q
	[ -z "$(ran)" ]
	[ "$(hits | grep -x 'base-tp[0-9]*' | tr '\n' ' ')" = "base-tp1 base-tp4 " ]
}

@test "pipelines: the sweep's rows carry the predicted memory peak, the GPU's memory and whether it fits" {
	# tracegen --profile-memory: the allocator's events; STAT_OPTS gives
	# graphstat the GPU's memory. 8 layers hold more than 4 (twice the
	# layers' parameters and activations on each stage), and each row's
	# fits says whether its predicted peak is at most that memory.
	run -0 --separate-stderr sweep TRACEGEN="$TINY --profile-memory" LAYERS='4 8' \
	    STAT_OPTS='--device-memory 30000000'
	[ "$output" = "sweep: $PWD/sweep.csv: 2 points" ]
	head -1 sweep.csv | tr , '\n' > cols
	p=$(grep -nx predicted_peak_bytes cols | cut -d: -f1)
	[ -n "$p" ]
	[ "$(sed -n "$((p + 1)),$((p + 2))p" cols | tr '\n' ' ')" = "device_memory_bytes fits " ]
	awk -F, -v p="$p" 'NR > 1 { n++
		if ($(p + 1) != 30000000 || $(p + 2) != ($p <= 30000000)) exit 1
		peak[$3] = $p } END { exit !(n == 4 && peak[8] > peak[4]) }' sweep.csv
}
