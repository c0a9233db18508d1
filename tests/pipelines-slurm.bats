#!/usr/bin/env bats
# pipelines/ on Slurm (SLURM=1), against a real one: a one-node cluster on
# 127.0.0.1 (tests/tools/minislurm: munged, slurmctld and slurmd, two
# CPUs, its files in a temporary folder) started for this file and
# stopped after it, even when a test fails. The base is tracegen's tiny
# job (8 ranks, dp 2: tracegen(1)). The grid's CSV against a local run's;
# a step that fails, one that Slurm kills for its memory, one killed at
# its time limit; a re-run that reuses the finished steps. Skipped, with
# the reason, where the daemons cannot start (not root, slurm-wlm not
# installed: scripts/deps.sh slurm).

load helpers

bats_require_minimum_version 1.5.0

TINY='--preset tiny --jobs 1'

# The sweep as a user runs it (not as a sub-make of make check).
sweep() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES \
	    make -s -j2 -C "$ROOT/pipelines" CACHE="$PWD/cache" WORK="$PWD/work" \
	    OUT="$PWD/sweep.csv" "$@"
}

ran() { awk '$1 == "run" { print $2 }' work/steps.log | sort; }
hits() { awk '$1 == "hit" { print $2 }' work/steps.log | sort; }

# graphsim for the time-limit test: sleeps well past a minute.
sleeper() {
	printf '#!/bin/sh\n[ "$1" = --version ] && exec graphsim --version\nexec sleep 300\n' > "$1"
	chmod +x "$1"
}

setup_file() {
	# A short path: munged's socket is in it.
	CLUSTER=$(mktemp -d /tmp/kgslurm.XXXXXX)
	export CLUSTER
	if ! "$ROOT/tests/tools/minislurm" start "$CLUSTER" > "$CLUSTER/why" 2>&1; then
		return 0
	fi
	touch "$CLUSTER/up"
	export SLURM_CONF=$CLUSTER/slurm.conf
	# Slurm counts time limits in minutes and looks every 30 s: the
	# time-limit test's sweep starts now, its graphsim never ending,
	# and is looked at by the last test (after 60 to 90 s).
	mkdir "$BATS_FILE_TMPDIR/limit"
	(
		cd "$BATS_FILE_TMPDIR/limit" || exit 1
		sleeper ./graphsim
		status=0
		sweep SLURM=1 TIME_LIMIT=1 GRAPHSIM="$PWD/graphsim" TRACEGEN="$TINY" > out 2> err || status=$?
		echo "$status" > status
	) < /dev/null > /dev/null 2>&1 3>&- &
}

teardown_file() {
	"$ROOT/tests/tools/minislurm" stop "$CLUSTER"
	rm -rf -- "$CLUSTER"
}

need_slurm() {
	[ -e "$CLUSTER/up" ] || skip "no Slurm: $(tr '\n' ' ' < "$CLUSTER/why")"
}

@test "pipelines on Slurm: a DP sweep gives the local run's CSV byte for byte, a step and a log for each rank" {
	need_slurm
	mkdir here
	(cd here && sweep TRACEGEN="$TINY" DP='1 2 4' NET=50,5)
	run -0 --separate-stderr sweep SLURM=1 TRACEGEN="$TINY" DP='1 2 4' NET=50,5
	[ "$output" = "sweep: $PWD/sweep.csv: 3 points" ]
	# nothing on stderr but graph-scale-dp's word that at dp 4 the
	# pipeline's sends cross nodes, where --net's 5 us a step is less than
	# the job's own NVLink fit (13 us): they take less time
	if grep -v "^graph-scale-dp: warning: .*: section 0: 128 collectives of groups other than the data-parallel one take less time with 4 replicas: " <<< "$stderr" | grep -q .; then return 1; fi
	cmp sweep.csv here/sweep.csv
	# The merged graph under the local run's key, and its bytes, though
	# each rank was converted on its own.
	base=$(cat work/ref/base.ref)
	cmp "$base" "here/cache/${base##*/}"
	# The local run's steps, and a conversion for each of the 8 ranks.
	[ "$(ran | grep -v '^base:' | tr '\n' ' ')" = "$(cd here && ran | tr '\n' ' ')" ]
	[ "$(ran | grep -c '^base:rank-[0-7]\.json\.gz$')" -eq 8 ]
	# Each ran there, and told so in its log: a job step's, and the job
	# array's tasks'.
	grep -q "^run    base-dp4 (" work/logs/base-dp4.log
	grep -q "^run    dp1-pp2-l4 (" work/logs/dp1-pp2-l4.log
	grep -q "^run    base (" work/logs/base.log
	for i in 0 1 2 3 4 5 6 7; do
		grep -q "^run    base:rank-$i\.json\.gz (" "work/logs/base.$i.log"
	done
	# Again, with srun and sbatch that fail: every step found cached,
	# Slurm asked for nothing.
	mkdir fake
	for c in srun sbatch; do
		printf '#!/bin/sh\necho %s >> "%s/calls"\nexit 1\n' "$c" "$PWD" > "fake/$c"
		chmod +x "fake/$c"
	done
	cp sweep.csv first.csv
	: > work/steps.log
	PATH="$PWD/fake:$PATH" run -0 --separate-stderr sweep SLURM=1 TRACEGEN="$TINY" DP='1 2 4' NET=50,5
	[ ! -e calls ]
	[ -z "$(ran)" ]
	# traces, base, base-layers, base-dp1, base-dp4, the stats of 3 points
	[ "$(hits | wc -l)" -eq 8 ]
	cmp sweep.csv first.csv
}

@test "pipelines on Slurm: a tool's warning reaches the sweep's standard error, as in a local run" {
	need_slurm
	# dp 4 with no --net: graph-scale-dp takes the network from the
	# built-in topology and warns
	mkdir here
	(cd here && sweep TRACEGEN="$TINY" DP=4 2> err)
	grep -q '^graph-scale-dp: warning: .*: no collective over the network in the job' here/err
	run -0 --separate-stderr sweep SLURM=1 TRACEGEN="$TINY" DP=4
	# the same lines, but for the cache's folder in the file names
	[ "$stderr" = "$(sed "s|$PWD/here/cache/|$PWD/cache/|" here/err)" ]
}

@test "pipelines on Slurm: within an allocation every step, each rank's too, is a job step of it; the same CSV" {
	need_slurm
	mkdir here
	(cd here && sweep TRACEGEN="$TINY" DP='1 4' NET=50,5)
	# No job array there (an sbatch that fails), and one CPU:
	# graphsim | graphstat, which asks for two, gets the one.
	mkdir fake
	printf '#!/bin/sh\necho sbatch >> "%s/calls"\nexit 1\n' "$PWD" > fake/sbatch
	chmod +x fake/sbatch
	export -f sweep
	export ROOT
	PATH="$PWD/fake:$PATH" run -0 --separate-stderr salloc --quiet -N 1 -c 1 --mem=1900 \
	    bash -c 'sweep SLURM=1 TRACEGEN="$1" DP="1 4" NET=50,5' _ "$TINY"
	[ "$output" = "sweep: $PWD/sweep.csv: 2 points" ]
	[ ! -e calls ]
	cmp sweep.csv here/sweep.csv
	[ "$(ran | grep -c '^base:rank-')" -eq 8 ]
	grep -q "^run    base:rank-0\.json\.gz (" work/logs/base.0.log
	grep -q "^run    dp4-pp2-l4 (" work/logs/dp4-pp2-l4.log
}

@test "pipelines on Slurm: two sweeps at once sharing a cache, the same keys computed at once, leave one whole file each" {
	need_slurm
	mkdir a b
	(cd a && sweep TRACEGEN="$TINY" DP='1 4' NET=50,5 CACHE="$PWD/../local")
	for d in a b; do
		(cd "$d" && sweep SLURM=1 TRACEGEN="$TINY" DP='1 4' NET=50,5 CACHE="$PWD/../shared" \
		    OUT="$PWD/slurm.csv" > out 2> err; echo $? > status) &
	done
	wait
	[ "$(cat a/status b/status | tr '\n' ' ')" = "0 0 " ]
	cmp a/slurm.csv a/sweep.csv
	cmp b/slurm.csv a/sweep.csv
	[ -z "$(find shared -name '*tmp*')" ]
	# every output the local run made, once, the same bytes (the local
	# cache's stats name its own base: the graphs alone compare)
	for f in local/*.kg; do
		cmp "$f" "shared/${f##*/}"
	done
	[ "$(ls shared | grep -c '\.kg$')" -eq "$(( $(ls local | grep -c '\.kg$') + 8 ))" ]
}

@test "pipelines/step: a temporary file of a gone process is removed on its own machine only" {
	mkdir cache
	host=$(uname -n)
	for id in "2147483646@$host" 2147483646 "2147483646@$host.elsewhere" "$$@$host"; do
		printf 'half' > "cache/.0123456789abcdef.kg.tmp.$id"
		printf 'key' > "cache/.0123456789abcdef.kg.tmp.$id.key"
	done
	printf '#!/bin/sh\n[ "$1" = --version ] && { echo t 1; exit 0; }\necho out\n' > t
	chmod +x t
	run -0 --separate-stderr "$ROOT/pipelines/step" -q -c cache -L t -- ./t
	# gone here: removed; another machine's, and a running one's: kept
	[ "$(cd cache && ls -A | grep tmp | sort | paste -sd' ')" = "$(printf '.0123456789abcdef.kg.tmp.%s\n' \
	    "$$@$host" "$$@$host.key" "2147483646@$host.elsewhere" "2147483646@$host.elsewhere.key" | sort | paste -sd' ')" ]
}

@test "pipelines on Slurm: a failing step fails the grid with its name and its log's end; a re-run reuses every finished step" {
	need_slurm
	# graph-scale-dp failing while ./broken is there: the same script,
	# so the same key, when it is gone.
	mkdir tools
	printf '#!/bin/sh\n[ "$1" = --version ] && exec graph-scale-dp --version\n[ -e "%s/broken" ] && { echo "graph-scale-dp: stand-in broken" >&2; exit 1; }\nexec graph-scale-dp "$@"\n' \
	    "$PWD" > tools/graph-scale-dp
	chmod +x tools/graph-scale-dp
	touch broken
	run -2 --separate-stderr sweep SLURM=1 SCALE_DP="$PWD/tools/graph-scale-dp" TRACEGEN="$TINY" DP=1
	[ -z "$output" ]
	[[ $stderr == *"slurm: base-dp1: failed (srun status 1), $PWD/work/logs/base-dp1.log ends:
  run    base-dp1 ("*"
  graph-scale-dp: stand-in broken
  step: base-dp1: failed (status 1)
  srun: error: kgnode: task 0: Exited with exit code 1"* ]]
	[ ! -e sweep.csv ]
	[ ! -e work/ref/base-dp1.ref ]
	[ -z "$(find cache -name '*tmp*')" ]
	k=$(awk '$2 == "base-dp1" { print $3 }' work/steps.log)
	[ -n "$k" ] && [ ! -e "cache/$k.kg" ] && [ ! -e "cache/$k.key" ]
	# The steps that finished: all but base-dp1 and the point after it.
	finished=$(awk '$1 == "run" { print $2, $3 }' work/steps.log | while read -r l k; do
		[ -z "$(find cache -name "$k.*" ! -name '*.key')" ] || echo "$l"
	done | sort)
	[ "$(echo "$finished" | wc -l)" -eq 11 ]
	[ "$(echo "$finished" | grep -c '^base:rank-')" -eq 8 ]
	rm broken
	: > work/steps.log
	run -0 --separate-stderr sweep SLURM=1 SCALE_DP="$PWD/tools/graph-scale-dp" TRACEGEN="$TINY" DP=1
	[ "$(ran | tr '\n' ' ')" = "base-dp1 dp1-pp2-l4 " ]
	# (a finished base is found whole: its ranks are not looked at)
	[ "$(hits | tr '\n' ' ')" = "base base-layers traces " ]
	[ "$(wc -l < sweep.csv)" -eq 3 ]
}

@test "pipelines on Slurm: a rank whose conversion fails is named, the base not merged; the others are kept" {
	need_slurm
	mkdir tools
	printf '#!/bin/sh\n[ "$1" = --version ] && exec kineto2graph --version\ncase "$*" in *rank-3.json.gz*) [ -e "%s/broken" ] && { echo "kineto2graph: stand-in broken" >&2; exit 1; } ;; esac\nexec kineto2graph "$@"\n' \
	    "$PWD" > tools/kineto2graph
	chmod +x tools/kineto2graph
	touch broken
	run -2 --separate-stderr sweep SLURM=1 KINETO2GRAPH="$PWD/tools/kineto2graph" TRACEGEN="$TINY"
	[ -z "$output" ]
	[[ $stderr == "slurm: base:rank-3.json.gz: failed (task 3 of base), $PWD/work/logs/base.3.log ends:
  run    base:rank-3.json.gz ("*")
  kineto2graph: stand-in broken
  step: base:rank-3.json.gz: failed (status 1)
slurm: base: 1 of 8 tasks failed"* ]]
	[ ! -e sweep.csv ]
	[ -z "$(find cache -name '*tmp*')" ]
	# the 7 other ranks, and the traces
	[ "$(find cache -name '*.kg' | wc -l)" -eq 7 ]
	rm broken
	: > work/steps.log
	run -0 --separate-stderr sweep SLURM=1 KINETO2GRAPH="$PWD/tools/kineto2graph" TRACEGEN="$TINY"
	[ "$(ran | tr '\n' ' ')" = "base base-layers base:rank-3.json.gz dp2-pp2-l4 " ]
	[ "$(hits | grep -c '^base:rank-')" -eq 7 ]
}

@test "pipelines on Slurm: a step killed for its memory fails with Slurm's message" {
	need_slurm
	# 64 MiB asked for (-m 64), 300 MiB touched.
	run -1 --separate-stderr "$ROOT/pipelines/slurm" -l logs -L hog -m 64 -n 1 -- \
	    python3 -c 'x = bytearray(300 << 20); [x.__setitem__(i, 1) for i in range(0, len(x), 4096)]; import time; time.sleep(10)'
	[ -z "$output" ]
	[[ $stderr == "slurm: hog: failed (srun status "*"), logs/hog.log ends:"* ]]
	[[ $stderr == *"exceeded memory limit"* ]]
	[[ $stderr == *"srun: error: kgnode: task 0: Killed"* ]]
	# -M: the memory asked for, whatever -m says
	run -0 --separate-stderr "$ROOT/pipelines/slurm" -l logs -L small -M 400 -m 64 -n 1 -- \
	    python3 -c 'x = bytearray(300 << 20); [x.__setitem__(i, 1) for i in range(0, len(x), 4096)]; print("done")'
	[ "$output" = done ]
}

@test "pipelines on Slurm: a task of a job array that fails is named, with its log's end" {
	need_slurm
	{
		echo "r0 echo zero"
		echo "r1 echo one >&2; exit 3"
		echo "r2 echo two"
	} > list
	run -1 --separate-stderr "$ROOT/pipelines/slurm" -l logs -a list -L arr -m 64 -n 1
	[ -z "$output" ]
	[ "${stderr%%$'\n'*}" = "slurm: r1: failed (task 1 of arr), logs/arr.1.log ends:" ]
	[[ $stderr == *$'\n'"  one"$'\n'"slurm: arr: 1 of 3 tasks failed" ]]
	[ "$(cat logs/arr.0.log)" = zero ]
	[ "$(cat logs/arr.2.log)" = two ]
}

@test "pipelines/step -a: each rank file a step of its own, the merge under the one pipeline's key, with its bytes" {
	tracegen --preset tiny --jobs 1 -d job
	run -0 --separate-stderr "$ROOT/pipelines/step" -c one -n -L base -i job/rank-0.json.gz -i job/rank-1.json.gz \
	    -i job/rank-5.json.gz -- kineto2graph '|' graph-deps --merge
	whole=$output
	run -0 --separate-stderr "$ROOT/pipelines/step" -c apart -n -a -L base -i job/rank-0.json.gz -i job/rank-1.json.gz \
	    -i job/rank-5.json.gz -- kineto2graph '|' graph-deps --merge
	[ "${output##*/}" = "${whole##*/}" ]
	cmp "$output" "$whole"
	[ "$(printf '%s\n' "$stderr" | awk '{ print $1, $2 }' | tr '\n' ' ')" = \
	    "run base:rank-0.json.gz run base:rank-1.json.gz run base:rank-5.json.gz run base " ]
	# each rank's graph is kineto2graph's of its file alone
	kineto2graph job/rank-5.json.gz > r5.kg
	cmp r5.kg "apart/$(printf '%s\n' "$stderr" | sed -n 's/^run    base:rank-5.json.gz (\(.*\))$/\1/p').kg"
	# again: the merge found whole, its ranks not looked at
	run -0 --separate-stderr "$ROOT/pipelines/step" -c apart -n -a -L base -i job/rank-0.json.gz -i job/rank-1.json.gz \
	    -i job/rank-5.json.gz -- kineto2graph '|' graph-deps --merge
	[ "$stderr" = "hit    base ($(basename "$whole" .kg))" ]
	run -1 --separate-stderr "$ROOT/pipelines/step" -c apart -a -L x -i job/rank-0.json.gz -- kineto2graph
	[ "$stderr" = "step: -a takes a pipeline of two commands or more" ]
}

@test "pipelines/slurm: usage errors exit 2" {
	run -2 --separate-stderr "$ROOT/pipelines/slurm" -m 64 -n 1 -- true
	[[ $stderr == "usage: slurm "* ]]
	run -2 --separate-stderr "$ROOT/pipelines/slurm" -L x -m 64 -n 1
	[[ $stderr == "usage: slurm "* ]]
	run -2 --separate-stderr "$ROOT/pipelines/slurm" -L x -m 64 -n 1 -a list -- true
	[[ $stderr == "usage: slurm "* ]]
	run -2 --separate-stderr "$ROOT/pipelines/slurm" -L x -m 0 -n 1 -- true
	[ "$stderr" = "slurm: 0: not a count" ]
	run -2 --separate-stderr "$ROOT/pipelines/slurm" -L x -m 64 -n 1 -Z -- true
	[ ! -e logs ]
}

# Last: the sweep started with the cluster has met its time limit.
@test "pipelines on Slurm: a step killed at its time limit fails the grid with Slurm's message" {
	need_slurm
	cd "$BATS_FILE_TMPDIR/limit"
	for _ in $(seq 150); do
		[ -e status ] && break
		sleep 1
	done
	[ "$(cat status)" = 2 ]
	run cat err
	[[ $output == *"slurm: dp2-pp2-l4: failed (srun status "*"), $PWD/work/logs/dp2-pp2-l4.log ends:"* ]]
	[[ $output == *"CANCELLED AT "*" DUE TO TIME LIMIT ***"* ]]
	[ ! -e sweep.csv ]
	[ -z "$(find cache -name '*.csv')" ]
}
