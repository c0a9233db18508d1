#!/usr/bin/env bats
# graph-deps --merge and graphsim on job sections: hand-written ranks
# (tests/fixtures/merge/*.jsonl, and heredocs of collectives below) whose
# job section, matches, transfer times, clock offsets and simulated times
# are worked out by hand in the comments; the errors; and the eight DLRM
# ranks of the shared traces, merged and simulated.

load helpers

mkstream() { # JSON lines on stdin -> a graph stream on stdout
	"$ROOT/tests/tools/jsonl2kg" | zstd -q -c
}

# A fixture from tests/fixtures/merge, as a stream in NAME.kg.
fixture() {
	mkstream < "$FIX/merge/$1.jsonl" > "$1.kg"
}

# two.jsonl cut into one stream per rank: r0.kg and r1.kg.
split_two() {
	awk '/"r":"header"/ { n++ } { print > ("r" (n - 1) ".jsonl") }' "$FIX/merge/two.jsonl"
	mkstream < r0.jsonl > r0.kg
	mkstream < r1.jsonl > r1.kg
}

# One rank's section, from one line a task on stdin: {"n": NAME, "ts": TS,
# "d": D} and "coll" (its type), "pgr" and "pg" (texts), "seq", "gs" where
# given; "k" defaults to "coll". All on one stream, no edges. Arguments:
# the rank and the world size.
mkrank() {
	jq -c -s --argjson rank "$1" --argjson world "$2" '
		. as $t
		| (reduce ($t[] | .n, .pg, .pgr | select(. != null)) as $s
			([]; if any(.[]; . == $s) then . else . + [$s] end)) as $strs
		| ([$t[] | .tid // 7] | unique) as $tids
		| def sid($s): $strs | index([$s]);
		{r: "header", format: "kgraph", major: 1, minor: 2, producer: "t", unit: "ns",
		 rank: $rank, world: $world, tools: ["kineto2graph 0.1"]},
		($strs | to_entries[] | {r: "str", id: .key, s: .value}),
		($tids | to_entries[] | {r: "proc", id: .key, k: "stream", pid: $rank, tid: .value}),
		($t | to_entries[] | .key as $i | .value as $x
			| {r: "task", id: $i, p: ($tids | index([$x.tid // 7])), k: ($x.k // "coll"), n: sid($x.n),
			   d: $x.d, ts: $x.ts, it: -1}
			+ (if $x.coll then {coll: $x.coll} else {} end)
			+ (if $x.gs then {gs: $x.gs} else {} end)
			+ (if $x.pg then {pg: sid($x.pg)} else {} end)
			+ (if $x.pgr then {pgr: sid($x.pgr)} else {} end)
			+ (if $x.seq then {seq: $x.seq} else {} end)),
		{r: "end", tasks: ($t | length), edges: 0, procs: ($tids | length), strs: ($strs | length)}
	' | mkstream
}

# "SRC -> DST how" for the rank edges of a stream, by task name, sorted.
rank_edges() {
	edges_by_name "$1" | awk '$4 == "rank" { print $1, $2, $3, $5 }' | sort
}

# "NAME d od" for the collectives of a stream (od: the traced duration).
colls() {
	graphcat -r "$1" | jq -r 'select(.r == "task" and .k == "coll") | "\(.n) \(.d) \(.od // .d)"'
}

# The header of a stream, as one JSON line.
header() {
	graphcat "$1" | head -n 1
}

# graphcat -r with each section's simulated times on its tasks.
simcat() {
	graphcat -r "$@" | "$ROOT/tests/tools/simjoin"
}

# "NAME SS SE" for each task of a simulated stream, in id order.
times() {
	simcat "$@" | jq -r 'select(.r == "task") | "\(.n) \(.ss) \(.se)"'
}

# --- usage ---------------------------------------------------------------

@test "graph-deps --merge: -o writes the job to the file, as stdout gets it" {
	fixture two
	graph-deps --merge -o job.kg two.kg
	graph-deps --merge two.kg > stdout.kg
	graphcat job.kg > a
	graphcat stdout.kg > b
	[ -s a ]
	cmp a b
}

@test "graph-deps --merge: -v prints a line per rank on stderr, and the stream is the same" {
	fixture two
	run -0 --separate-stderr bash -c 'graph-deps --merge -v two.kg | graphcat'
	[ "${#stderr_lines[@]}" -eq 2 ]
	# two.jsonl: 4 tasks and 1 collective a rank, matched; rank 1's
	# clock runs 5000 ns ahead (see the clock test)
	[ "${stderr_lines[0]}" = "graph-deps: rank 0: 4 tasks, 1 collective, 1 matched, clock offset 0 ns" ]
	[ "${stderr_lines[1]}" = "graph-deps: rank 1: 4 tasks, 1 collective, 1 matched, clock offset 5000 ns" ]
	[ "$output" = "$(graph-deps --merge two.kg | graphcat)" ]
	run -0 --separate-stderr bash -c 'graph-deps --merge two.kg > /dev/null'
	[ -z "$stderr" ]
}

@test "graph-deps: -v without --merge, and -o with --check, are usage errors" {
	fixture two
	run -2 --separate-stderr graph-deps --check -v two.kg
	[ -z "$output" ]
	[ "${stderr_lines[0]}" = "graph-deps: -v goes with --merge only" ]
	[[ ${stderr_lines[1]} == "usage: graph-deps "* ]]
	run -2 --separate-stderr graph-deps --summary --verbose two.kg
	[ "${stderr_lines[0]}" = "graph-deps: -v goes with --merge only" ]
	run -2 --separate-stderr graph-deps --check -o out two.kg
	[ -z "$output" ]
	[ "${stderr_lines[0]}" = "graph-deps: -o goes with --drop or --merge only" ]
	[ ! -e out ]
	run -2 --separate-stderr graph-deps --merge --check two.kg
	[ "${stderr_lines[0]}" = "graph-deps: give exactly one of --check, --summary, --drop, --merge" ]
}

@test "graph-deps: the usage line is the man page's SYNOPSIS" {
	command -v mandoc > /dev/null || skip "no mandoc"
	syn=$(mandoc -Tascii -Owidth=200 "$ROOT/doc/graph-deps.1" | col -b |
		sed -n '/^SYNOPSIS/{n;p;q}' | sed 's/^ *//')
	use=$(graph-deps --help | head -n 1)
	[ "usage: $syn" = "$use" ]
}

# --- the job section -----------------------------------------------------

@test "graph-deps --merge: two ranks give the job section worked out by hand" {
	# two.jsonl, two ranks of world 2, each: a thread with "step" (cpu,
	# d 3) and a stream with gemm -> nccl_ar -> relu (stream edges), the
	# allreduce in group "[0, 1]" with seq 0. On the true clock rank 0
	# runs gemm 1000..1010, waits in nccl_ar 1010..1035; rank 1 runs gemm
	# 1004..1030, nccl_ar 1030..1035: both end the allreduce at 1035.
	# Rank 1's clock is 5000 ns ahead: its trace says 6004, 6030, 6035.
	# Expected (two.job.jsonl):
	# - header: rank -1, world 2, iters and tools from the inputs plus
	#   "graph-deps 0.1", tbase 0 (the earliest), ranks [0,1]; clk [0,5000]
	#   (ends 1035 and 6035: median of the two is their midpoint 3535, so
	#   offsets -2500 and 2500, 5000 apart, relative to rank 0); t0 [0,4]
	#   (earliest task 1000 on rank 0, 6004 - 5000 = 1004 on rank 1);
	# - procs 0-1 rank 0's, 2-3 rank 1's, each with "rank";
	# - tasks 0-3 rank 0's, 4-7 rank 1's, ts of rank 1 less 5000;
	#   nccl_ar d min(25, 5) = 5 on both, od 25 on rank 0 (rank 1's od is
	#   its d, so not written);
	# - the four stream edges moved up, then one rank edge 2 -> 6 (how
	#   trace, the default: matched by seq);
	# - cov: the inputs' tasks_coll summed, coll_matched 2, unmatched 0;
	# - end: 8 tasks, 5 edges, 4 procs, 7 strs.
	fixture two
	graph-deps --merge two.kg > job.kg
	graphcat -r job.kg > got
	diff "$FIX/merge/two.job.jsonl" got
}

@test "graph-deps --merge: strings are interned once across ranks" {
	fixture two
	graph-deps --merge two.kg > job.kg
	# step, gemm, nccl_ar, relu, "[0, 1]" on both ranks (in another
	# order on rank 1), worker0 and worker1: 7 texts, each once
	graphcat job.kg | jq -r 'select(.r == "str") | .s' | sort > strs
	diff - strs <<-'EOF'
	[0, 1]
	gemm
	nccl_ar
	relu
	step
	worker0
	worker1
	EOF
	graphcat job.kg | jq -e 'select(.r == "end") | .strs == 7'
	# ids dense from 0
	[ "$(graphcat job.kg | jq -r 'select(.r == "str") | .id' | tr '\n' ' ')" = "0 1 2 3 4 5 6 " ]
}

@test "graph-deps --merge: ids follow rank order whatever the order of the inputs" {
	split_two
	graph-deps --merge r1.kg r0.kg > swapped.kg
	cat r1.kg r0.kg | graph-deps --merge > catswapped.kg
	# the same job but for the direction of the rank edge (next test)
	grep -v '"k":"rank"' "$FIX/merge/two.job.jsonl" > want
	graphcat -r swapped.kg | grep -v '"k":"rank"' > got
	diff want got
	graphcat -r catswapped.kg | grep -v '"k":"rank"' > got2
	diff want got2
	[ "$(rank_edges swapped.kg | wc -l)" -eq 1 ]
}

@test "graph-deps --merge: the rank edge starts at the lowest rank's task whatever the order of the inputs" {
	split_two
	graph-deps --merge r1.kg r0.kg > swapped.kg
	# task 2 is rank 0's nccl_ar, task 6 rank 1's
	[ "$(graphcat swapped.kg | grep '"k":"rank"')" = '{"r":"edge","src":2,"dst":6,"k":"rank"}' ]
}

@test "graph-deps --merge: a stream of several sections merges as the files do, stdin as a file" {
	split_two
	graph-deps --merge r0.kg r1.kg | graphcat -r > files
	cat r0.kg r1.kg | graph-deps --merge | graphcat -r > stdin
	cat r0.kg r1.kg | graph-deps --merge - | graphcat -r > dash
	cat r0.kg r1.kg > both.kg
	graph-deps --merge both.kg | graphcat -r > one
	diff "$FIX/merge/two.job.jsonl" files
	cmp files stdin
	cmp files dash
	cmp files one
}

@test "graph-deps --merge: ranks with different time bases are put on the earliest" {
	# rank 1's tbase 500 and every ts 500 less: the same instants, so the
	# same job (tbase 0, the earliest; rank 1's ts 6004 - 5000 as before)
	awk '/"r":"header"/ { n++ } { print n "\t" $0 }' "$FIX/merge/two.jsonl" |
		jq -R -c 'split("\t") | (.[0] | tonumber) as $s | .[1] | fromjson
			| if $s == 2 and .r == "header" then .tbase = 500
			  elif $s == 2 and .r == "task" then .ts -= 500 else . end' | mkstream > shifted.kg
	graphcat shifted.kg | grep -q '"rank":1,.*"tbase":500'
	graphcat shifted.kg | grep -q '"ts":5504'
	graph-deps --merge shifted.kg | graphcat -r > got
	diff "$FIX/merge/two.job.jsonl" got
}

# --- matching ------------------------------------------------------------

@test "graph-deps --merge: collectives match by ranks text, then group name, then group size or world" {
	# Three ranks, world 3, no sequence numbers: matched by order, so
	# every rank edge is "inferred". Groups:
	#   P: pgr "[0, 1]" on ranks 0 and 1;
	#   N: pg "sub", used by ranks 1 and 2 (no ranks text);
	#   W: no metadata: the world size 3, and 3 ranks have such;
	#   G: gs 2, no other metadata: ranks 0 and 2 have such, 2 of them.
	# Each group's one instance matches: a star from its lowest rank.
	mkrank 0 3 > r0.kg <<-'EOF'
	{"n":"P/0","coll":"allreduce","ts":100,"d":10,"pgr":"[0, 1]"}
	{"n":"W/0","coll":"allreduce","ts":200,"d":20}
	{"n":"G/0","coll":"broadcast","ts":300,"d":30,"gs":2}
	EOF
	mkrank 1 3 > r1.kg <<-'EOF'
	{"n":"P/1","coll":"allreduce","ts":110,"d":4,"pgr":"[0, 1]"}
	{"n":"N/1","coll":"allgather","ts":150,"d":6,"pg":"sub"}
	{"n":"W/1","coll":"allreduce","ts":210,"d":12}
	EOF
	mkrank 2 3 > r2.kg <<-'EOF'
	{"n":"N/2","coll":"allgather","ts":160,"d":9,"pg":"sub"}
	{"n":"W/2","coll":"allreduce","ts":205,"d":25}
	{"n":"G/2","coll":"broadcast","ts":305,"d":3,"gs":2}
	EOF
	graph-deps --merge r0.kg r1.kg r2.kg > job.kg
	diff - <(rank_edges job.kg) <<-'EOF'
	G/0 -> G/2 inferred
	N/1 -> N/2 inferred
	P/0 -> P/1 inferred
	W/0 -> W/1 inferred
	W/0 -> W/2 inferred
	EOF
	# transfer times: P min(10, 4), N min(6, 9), W min(20, 12, 25), G min(30, 3)
	diff - <(colls job.kg) <<-'EOF'
	P/0 4 10
	W/0 12 20
	G/0 3 30
	P/1 4 4
	N/1 6 6
	W/1 12 12
	N/2 6 9
	W/2 12 25
	G/2 3 3
	EOF
	[ "$(cov coll_matched job.kg)" -eq 9 ]
	[ "$(cov coll_unmatched job.kg)" -eq 0 ]
	[ "$(graphcat job.kg | grep -c 'coll_unmatched:')" -eq 0 ]
}

@test "graph-deps --merge: a group size that more ranks use than it says matches nothing" {
	# gs 2 without other metadata on all three ranks: 3 ranks for a group
	# of 2, no way to tell the pairs: all three unmatched, each counted
	for r in 0 1 2; do
		echo "{\"n\":\"G/$r\",\"coll\":\"broadcast\",\"ts\":100,\"d\":$((10 + r)),\"gs\":2}" | mkrank "$r" 3 > "r$r.kg"
	done
	graph-deps --merge r0.kg r1.kg r2.kg > job.kg
	[ -z "$(rank_edges job.kg)" ]
	diff - <(colls job.kg) <<-'EOF'
	G/0 10 10
	G/1 11 11
	G/2 12 12
	EOF
	[ "$(cov coll_matched job.kg)" -eq 0 ]
	[ "$(cov coll_unmatched job.kg)" -eq 3 ]
	[ "$(cov coll_unmatched:0 job.kg)" -eq 1 ]
	[ "$(cov coll_unmatched:1 job.kg)" -eq 1 ]
	[ "$(cov coll_unmatched:2 job.kg)" -eq 1 ]
}

@test "graph-deps --merge: sequence numbers pair equal numbers, though a rank's window lacks the first" {
	# Group "[0, 1]", every collective with a seq: rank 0 has 0, 1, 2;
	# rank 1's trace begins after its seq 0, so it has 1 and 2. By
	# number: 1 with 1, 2 with 2 (how "trace"), and rank 0's seq 0 alone,
	# unmatched. (By order it would pair S0/0 with S1/1: wrong.)
	mkrank 0 2 > r0.kg <<-'EOF'
	{"n":"S0/0","coll":"allreduce","ts":100,"d":10,"pgr":"[0, 1]","seq":0}
	{"n":"S1/0","coll":"allreduce","ts":200,"d":10,"pgr":"[0, 1]","seq":1}
	{"n":"S2/0","coll":"allreduce","ts":300,"d":10,"pgr":"[0, 1]","seq":2}
	EOF
	mkrank 1 2 > r1.kg <<-'EOF'
	{"n":"S1/1","coll":"allreduce","ts":205,"d":5,"pgr":"[0, 1]","seq":1}
	{"n":"S2/1","coll":"allreduce","ts":306,"d":4,"pgr":"[0, 1]","seq":2}
	EOF
	graph-deps --merge r0.kg r1.kg > job.kg
	diff - <(rank_edges job.kg) <<-'EOF'
	S1/0 -> S1/1 trace
	S2/0 -> S2/1 trace
	EOF
	diff - <(colls job.kg) <<-'EOF'
	S0/0 10 10
	S1/0 5 10
	S2/0 4 10
	S1/1 5 5
	S2/1 4 4
	EOF
	[ "$(cov coll_matched job.kg)" -eq 4 ]
	[ "$(cov coll_unmatched job.kg)" -eq 1 ]
	[ "$(cov coll_unmatched:0 job.kg)" -eq 1 ]
	[ "$(cov coll_unmatched:1 job.kg)" -eq 0 ]
}

@test "graph-deps --merge: without a seq on every collective of a group, the k-th by start on each rank" {
	# The same as above but S1/1 has no seq: the group goes by order of
	# start on each rank (rank 1's records are written latest first, and
	# still S1/1 at 205 is its first): S0/0 with S1/1, S1/0 with S2/1,
	# how "inferred"; S2/0 has no partner.
	mkrank 0 2 > r0.kg <<-'EOF'
	{"n":"S0/0","coll":"allreduce","ts":100,"d":10,"pgr":"[0, 1]","seq":0}
	{"n":"S1/0","coll":"allreduce","ts":200,"d":10,"pgr":"[0, 1]","seq":1}
	{"n":"S2/0","coll":"allreduce","ts":300,"d":10,"pgr":"[0, 1]","seq":2}
	EOF
	mkrank 1 2 > r1.kg <<-'EOF'
	{"n":"S2/1","coll":"allreduce","ts":306,"d":4,"pgr":"[0, 1]","seq":2}
	{"n":"S1/1","coll":"allreduce","ts":205,"d":5,"pgr":"[0, 1]"}
	EOF
	graph-deps --merge r0.kg r1.kg > job.kg
	diff - <(rank_edges job.kg) <<-'EOF'
	S0/0 -> S1/1 inferred
	S1/0 -> S2/1 inferred
	EOF
	[ "$(cov coll_matched job.kg)" -eq 4 ]
	[ "$(cov coll_unmatched:0 job.kg)" -eq 1 ]
}

@test "graph-deps --merge: a type mismatch or a missing participant leaves an instance unmatched, counted" {
	# Group "[0, 1]" by order: T (allreduce on 0, allgather on 1: a
	# mismatch), then OK (allgather on both: a match, d min(10, 5)).
	# Group "[0, 1, 2]": M on ranks 0 and 1 only, rank 2 has none: no
	# match. Unmatched: T and M on ranks 0 and 1, with their d; rank 2
	# has no collective, so no count of its own.
	mkrank 0 3 > r0.kg <<-'EOF'
	{"n":"T/0","coll":"allreduce","ts":100,"d":10,"pgr":"[0, 1]"}
	{"n":"M/0","coll":"allreduce","ts":200,"d":10,"pgr":"[0, 1, 2]"}
	{"n":"OK/0","coll":"allgather","ts":300,"d":10,"pgr":"[0, 1]"}
	EOF
	mkrank 1 3 > r1.kg <<-'EOF'
	{"n":"T/1","coll":"allgather","ts":100,"d":8,"pgr":"[0, 1]"}
	{"n":"M/1","coll":"allreduce","ts":200,"d":7,"pgr":"[0, 1, 2]"}
	{"n":"OK/1","coll":"allgather","ts":300,"d":5,"pgr":"[0, 1]"}
	EOF
	echo '{"n":"K/2","k":"kern","ts":100,"d":50}' | mkrank 2 3 > r2.kg
	graph-deps --merge r0.kg r1.kg r2.kg > job.kg
	diff - <(rank_edges job.kg) <<-'EOF'
	OK/0 -> OK/1 inferred
	EOF
	diff - <(colls job.kg) <<-'EOF'
	T/0 10 10
	M/0 10 10
	OK/0 5 10
	T/1 8 8
	M/1 7 7
	OK/1 5 5
	EOF
	[ "$(cov coll_matched job.kg)" -eq 2 ]
	[ "$(cov coll_unmatched job.kg)" -eq 4 ]
	[ "$(cov coll_unmatched:0 job.kg)" -eq 2 ]
	[ "$(cov coll_unmatched:1 job.kg)" -eq 2 ]
	[ "$(graphcat job.kg | grep -c 'coll_unmatched:2')" -eq 0 ]
}

@test "graph-deps --merge: a send and a receive of a two-rank group match, a send and an allreduce do not" {
	mkrank 0 2 > r0.kg <<-'EOF'
	{"n":"snd/0","coll":"send","ts":100,"d":30,"pgr":"[0, 1]"}
	{"n":"x/0","coll":"send","ts":200,"d":30,"pg":"other"}
	EOF
	mkrank 1 2 > r1.kg <<-'EOF'
	{"n":"rcv/1","coll":"recv","ts":120,"d":12,"pgr":"[0, 1]"}
	{"n":"x/1","coll":"allreduce","ts":200,"d":30,"pg":"other"}
	EOF
	graph-deps --merge r0.kg r1.kg > job.kg
	diff - <(rank_edges job.kg) <<-'EOF'
	snd/0 -> rcv/1 inferred
	EOF
	# the pair's transfer time: min(30, 12)
	diff - <(colls job.kg) <<-'EOF'
	snd/0 12 30
	x/0 30 30
	rcv/1 12 12
	x/1 30 30
	EOF
	[ "$(cov coll_matched job.kg)" -eq 2 ]
	[ "$(cov coll_unmatched job.kg)" -eq 2 ]
}

@test "graph-deps --merge: two sends, or two receives, of a two-rank group do not match" {
	mkrank 0 2 > r0.kg <<-'EOF'
	{"n":"a/0","coll":"send","ts":100,"d":30,"pgr":"[0, 1]"}
	{"n":"b/0","coll":"recv","ts":200,"d":30,"pgr":"[0, 1]"}
	{"n":"c/0","coll":"recv","ts":300,"d":30,"pgr":"[0, 1]"}
	EOF
	mkrank 1 2 > r1.kg <<-'EOF'
	{"n":"a/1","coll":"send","ts":100,"d":30,"pgr":"[0, 1]"}
	{"n":"b/1","coll":"recv","ts":200,"d":30,"pgr":"[0, 1]"}
	{"n":"c/1","coll":"send","ts":300,"d":20,"pgr":"[0, 1]"}
	EOF
	graph-deps --merge r0.kg r1.kg > job.kg
	diff - <(rank_edges job.kg) <<-'EOF'
	c/0 -> c/1 inferred
	EOF
	[ "$(cov coll_matched job.kg)" -eq 2 ]
	[ "$(cov coll_unmatched job.kg)" -eq 4 ]
}

@test "graph-deps --merge: without metadata, each stream and type is a sequence of its own" {
	# Two communicators on streams 7 and 9, issued in another order on
	# each rank: rank 0 ar (7) then a2a (9), rank 1 a2a (9) then ar (7).
	# By size alone the first of each rank would pair ar with a2a; by
	# size, stream and type both pairs match.
	mkrank 0 2 > r0.kg <<-'EOF'
	{"n":"ar/0","coll":"allreduce","ts":100,"d":30,"tid":7}
	{"n":"a2a/0","coll":"alltoall","ts":150,"d":30,"tid":9}
	EOF
	mkrank 1 2 > r1.kg <<-'EOF'
	{"n":"a2a/1","coll":"alltoall","ts":90,"d":90,"tid":9}
	{"n":"ar/1","coll":"allreduce","ts":120,"d":10,"tid":7}
	EOF
	graph-deps --merge r0.kg r1.kg > job.kg
	diff - <(rank_edges job.kg) <<-'EOF'
	a2a/0 -> a2a/1 inferred
	ar/0 -> ar/1 inferred
	EOF
	[ "$(cov coll_unmatched job.kg)" -eq 0 ]
}

# --- clocks --------------------------------------------------------------

@test "graph-deps --merge: a rank whose clock runs 5000 ns ahead gets clk 5000, its ts corrected, and t0" {
	# two.jsonl: see the job-section test. Ends 1035 (rank 0) and 6035
	# (rank 1): offset 5000 relative to rank 0. Rank 1's corrected ts
	# are 1004, 1004, 1030, 1035; t0: rank 0 starts at 1000, rank 1 at
	# 1004, so [0, 4] (relative to the earlier rank, not to tbase).
	fixture two
	graph-deps --merge two.kg > job.kg
	header job.kg | jq -e '.ranks == [0, 1] and .clk == [0, 5000] and .t0 == [0, 4] and .tbase == 0'
	[ "$(graphcat job.kg | jq -r 'select(.r == "task" and .id >= 4) | .ts' | tr '\n' ' ')" = "1004 1004 1030 1035 " ]
	# rank 0's own ts untouched
	[ "$(graphcat job.kg | jq -r 'select(.r == "task" and .id < 4) | .ts' | tr '\n' ' ')" = "1000 1000 1010 1035 " ]
}

@test "graph-deps --merge: clock offsets of three ranks from every instance, and transfer times" {
	# Three ranks, world 3, two allreduces that truly end at 10100 and
	# 10300. Rank 1's clock is 5000 ahead, rank 2's 2000 behind:
	#   rank 0: c1 10050 d 50, c2 10250 d 50 (ends 10100, 10300)
	#   rank 1: c1 15080 d 20, c2 15290 d 10 (ends 15100, 15300)
	#   rank 2: c1  8060 d 40, c2  8280 d 20 (ends  8100,  8300)
	# The first round gives E = the medians 10100 and 10300 and offsets
	# 0, 5000, -2000, which the next rounds keep. Corrected starts: rank 1
	# 10080, 10290; rank 2 10060, 10280; t0 = first start less 10050:
	# 0, 30, 10. Transfer times: c1 min(50, 20, 40) = 20, c2 min(50, 10,
	# 20) = 10.
	mkrank 0 3 > r0.kg <<-'EOF'
	{"n":"c1","coll":"allreduce","ts":10050,"d":50}
	{"n":"c2","coll":"allreduce","ts":10250,"d":50}
	EOF
	mkrank 1 3 > r1.kg <<-'EOF'
	{"n":"c1","coll":"allreduce","ts":15080,"d":20}
	{"n":"c2","coll":"allreduce","ts":15290,"d":10}
	EOF
	mkrank 2 3 > r2.kg <<-'EOF'
	{"n":"c1","coll":"allreduce","ts":8060,"d":40}
	{"n":"c2","coll":"allreduce","ts":8280,"d":20}
	EOF
	graph-deps --merge r0.kg r1.kg r2.kg > job.kg
	header job.kg | jq -e '.ranks == [0, 1, 2] and .clk == [0, 5000, -2000] and .t0 == [0, 30, 10]'
	diff - <(graphcat -r job.kg | jq -r 'select(.r == "task") | "\(.id) \(.n) \(.ts) \(.d) \(.od // .d)"') <<-'EOF'
	0 c1 10050 20 50
	1 c2 10250 10 50
	2 c1 10080 20 20
	3 c2 10290 10 10
	4 c1 10060 20 40
	5 c2 10280 10 20
	EOF
}

# --- errors --------------------------------------------------------------

@test "graph-deps --merge: a rank given twice is an error naming it, and -o leaves no file" {
	split_two
	run -1 --separate-stderr graph-deps --merge r0.kg r1.kg r0.kg
	[ -z "$output" ]
	[ "$stderr" = "graph-deps: r0.kg: section 0: rank 0 is in the input twice (first in r0.kg)" ]
	run -1 --separate-stderr bash -c 'cat r0.kg r1.kg r1.kg | graph-deps --merge -o job.kg'
	[ "$stderr" = "graph-deps: -: section 2: rank 1 is in the input twice (first in -)" ]
	[ ! -e job.kg ]
	[ -z "$(ls ./*.tmp* 2>/dev/null)" ]
	echo keep > old.kg
	run -1 graph-deps --merge -o old.kg r0.kg r0.kg
	[ "$(cat old.kg)" = keep ]
}

@test "graph-deps --merge: a job section is refused as input" {
	fixture two
	graph-deps --merge two.kg > job.kg
	run -1 --separate-stderr graph-deps --merge -o again.kg job.kg
	[ "$stderr" = "graph-deps: job.kg: section 0 is a job section already (from graph-deps --merge)" ]
	[ ! -e again.kg ]
	# after a rank's section, too
	split_two
	run -1 --separate-stderr graph-deps --merge r0.kg job.kg
	[ "$stderr" = "graph-deps: job.kg: section 0 is a job section already (from graph-deps --merge)" ]
}

@test "graph-deps --merge: an edge to an unknown task names its record, and -o leaves no file" {
	# rank 0 of two.jsonl: header, 6 str, 2 proc, 4 task, 2 edge: the bad
	# edge, put before the cov record, is record 16
	split_two
	{
		grep -v '"r":"cov"\|"r":"end"' r0.jsonl
		echo '{"r":"edge","src":1,"dst":9,"k":"stream"}'
		echo '{"r":"end","tasks":4,"edges":3,"procs":2,"strs":6}'
	} | mkstream > bad.kg
	run -1 --separate-stderr graph-deps --merge -o job.kg r1.kg bad.kg
	[ "$stderr" = "graph-deps: bad.kg: record 16: edge to an unknown task" ]
	[ ! -e job.kg ]
	[ -z "$(ls ./*.tmp* 2>/dev/null)" ]
}

@test "graph-deps --merge: a full disk is a write error" {
	fixture two
	run -1 --separate-stderr bash -c 'graph-deps --merge two.kg > /dev/full'
	[ "$stderr" = "graph-deps: stdout: write error: No space left on device" ]
	run -1 --separate-stderr graph-deps --merge -o /dev/full two.kg
	[ "$stderr" = "graph-deps: /dev/full: write error: No space left on device" ]
}

# --- graphsim on a job ---------------------------------------------------

@test "graphsim: a merged collective ends on both ranks at the last arrival plus d" {
	# The job of two.jsonl: nccl_ar d 5 on both ranks, t0 [0, 4].
	# Rank 0: step 0..3; gemm 0..10; nccl_ar arrives at 10. Rank 1 starts
	# at 4: step 4..7; gemm 4..30; nccl_ar arrives at 30. Both end at
	# 30 + 5 = 35: rank 0's ss 10 se 35 (its wait and d), rank 1's 30..35.
	# relu, after it on each stream: 35..42.
	fixture two
	graph-deps --merge two.kg | graphsim > sim.kg
	diff - <(times sim.kg) <<-'EOF'
	step 0 3
	gemm 0 10
	nccl_ar 10 35
	relu 35 42
	step 4 7
	gemm 4 30
	nccl_ar 30 35
	relu 35 42
	EOF
	simcat sim.kg | grep -qx '{"r":"sim","tasks":8,"makespan":42}'
}

@test "graphsim: a waiting collective holds its stream, each member ends at the last arrival plus its own d" {
	# rendezvous.jsonl, a job section by hand, t0 [0, 0]. Rank 0's stream:
	# a0 (d 10) -> c0 (d 5) -> after0 (d 7), and late (d 4) launched by
	# launch_late (thread, d 3) with delay 12, so ready at 15. Rank 1: a1
	# (d 30) -> c1 (d 8) -> after1 (d 7). c0 and c1 joined by a rank edge.
	# a0 0..10, c0 arrives 10 and holds the stream; late is ready at 15
	# but waits; a1 0..30, c1 arrives 30: c0 ends 30 + 5 = 35, c1 30 + 8 =
	# 38. At 35 late (id 2) and after0 (id 3) are both ready: late 35..39,
	# after0 39..46. after1 38..45.
	fixture rendezvous
	graphsim rendezvous.kg > sim.kg
	diff - <(times sim.kg) <<-'EOF'
	a0 0 10
	c0 10 35
	late 35 39
	after0 39 46
	launch_late 0 3
	a1 0 30
	c1 30 38
	after1 38 45
	EOF
}

@test "graphsim: a job section's ranks begin at their t0" {
	# rendezvous.jsonl with t0 [0, 20]: rank 1's roots start at 20; a1
	# 20..50, c1 arrives 50: c0 ends 55, c1 58; late 55..59, after0
	# 59..66, after1 58..65. Rank 0's roots still start at 0.
	jq -c 'if .r == "header" then .t0 = [0, 20] else . end' "$FIX/merge/rendezvous.jsonl" | mkstream > late.kg
	graphsim late.kg > sim.kg
	diff - <(times sim.kg) <<-'EOF'
	a0 0 10
	c0 10 55
	late 55 59
	after0 59 66
	launch_late 0 3
	a1 20 50
	c1 50 58
	after1 58 65
	EOF
}

@test "graphsim: ranks simulated without a merge are replayed on their own, as before" {
	# two.jsonl unmerged: two sections, each from 0, no rendezvous, every
	# task its traced d. Rank 0 as in the job (its nccl_ar lasted 25);
	# rank 1: gemm 0..26, nccl_ar 26..31, relu 31..38.
	fixture two
	graphsim two.kg > sim.kg
	diff - <(times sim.kg) <<-'EOF'
	step 0 3
	gemm 0 10
	nccl_ar 10 35
	relu 35 42
	step 0 3
	gemm 0 26
	nccl_ar 26 31
	relu 31 38
	EOF
}

@test "graphsim: collectives that wait for each other in opposite orders are stuck" {
	# deadlock.jsonl: rank 0's stream runs A0 then B0, rank 1's B1 then
	# A1; A0~A1 and B0~B1 are rendezvous groups. A0 arrives and holds
	# stream 0 for A1, which waits behind B1 on stream 1, which waits for
	# B0, which waits behind A0: none of the four ends.
	fixture deadlock
	run -1 --separate-stderr graphsim -o sim.kg deadlock.kg
	[ "$stderr" = "graphsim: deadlock.kg: section 0: 4 tasks can never start (a cycle, or a wait on a task that never runs): A0#0, B0#1, B1#2, ..." ]
	[ ! -e sim.kg ]
}

# --- the shared DLRM job -------------------------------------------------

dlrm_job() {
	need_traces
	local dir="$TRACES/param_dlrm_8rank_v100/kineto"
	[ -d "$dir" ] || skip "no $dir"
	kineto2graph -q "$dir"/*.json.gz | graph-deps --merge > job.kg
}

@test "graph-deps --merge: the eight DLRM ranks match all 64 collectives" {
	dlrm_job
	# 8 ranks with 8 NCCL kernels each (5 all-to-alls, 3 allreduces),
	# every instance on all 8 ranks: all matched
	header job.kg | jq -e '.ranks == [0, 1, 2, 3, 4, 5, 6, 7] and .world == 8 and (.clk | length) == 8 and (.t0 | length) == 8'
	[ "$(cov coll_matched job.kg)" -eq 64 ]
	[ "$(cov coll_unmatched job.kg)" -eq 0 ]
	[ "$(graphcat job.kg | jq -r 'select(.r == "task" and .k == "coll") | .id' | wc -l)" -eq 64 ]
}

@test "graph-deps --merge: DLRM ranks converted in parallel, one file each, merge into the job of one pipe" {
	dlrm_job
	# the recipe of graph-deps(1)
	for f in "$TRACES"/param_dlrm_8rank_v100/kineto/*.json.gz; do
		ln -s "$f" "r$(basename "$f" | sed 's/^worker\([0-9]\).*/\1/').json.gz"
	done
	ls r*.json.gz | xargs -P 2 -I{} kineto2graph -q -o {}.kg {}
	[ "$(ls r*.json.gz.kg | wc -l)" -eq 8 ]
	graph-deps --merge r*.kg > par.kg
	graphcat job.kg > want
	graphcat par.kg > got
	cmp want got
}

@test "graph-deps --merge: DLRM ranks in one zstd frame (sections cut inside it) and in reverse order merge as their own frames do" {
	dlrm_job
	# The merge holds each section's frames to read them again; a stream
	# whose frames do not begin and end with its sections (one frame for
	# all eight here) has its sections compressed anew.
	kineto2graph -q $(ls "$TRACES"/param_dlrm_8rank_v100/kineto/*.json.gz | sort -r) > rev.kg
	zstd -q -dc rev.kg | zstd -q -c > one.kg
	[ "$(python3 "$ROOT/tests/tools/zframes.py" one.kg | wc -l)" -eq 1 ]
	[ "$(python3 "$ROOT/tests/tools/zframes.py" rev.kg | wc -l)" -gt 8 ]
	graph-deps --merge rev.kg | graphcat > want
	graph-deps --merge one.kg | graphcat > got
	cmp want got
	graph-deps --merge < one.kg | graphcat > got
	cmp want got
	# the job of the ranks in order, but for the order of its strings and
	# counts, and its header's source
	graphcat -r job.kg | grep -v '"r":"header"' | jq -cS . > a
	graph-deps --merge rev.kg | graphcat -r | grep -v '"r":"header"' | jq -cS . > b
	cmp a b
}

@test "graph-deps --merge: compressing on a thread of its own or not writes the same bytes" {
	dlrm_job
	kineto2graph -q "$TRACES"/param_dlrm_8rank_v100/kineto/*.json.gz > ranks.kg
	KG_WRITER_THREAD=0 kineto2graph -q "$TRACES"/param_dlrm_8rank_v100/kineto/*.json.gz > ranks0.kg
	cmp ranks.kg ranks0.kg
	graph-deps --merge ranks.kg > a.kg
	KG_WRITER_THREAD=0 graph-deps --merge ranks.kg > b.kg
	cmp a.kg b.kg
	graphsim a.kg > sa.kg
	KG_WRITER_THREAD=0 graphsim a.kg > sb.kg
	cmp sa.kg sb.kg
	# frames too large to hold whole for the threads (a large job's sim
	# record), made so by a hold of 16 KiB: compressed by the caller
	KG_WRITER_FRAME_HOLD=16384 graph-deps --merge ranks.kg > c.kg
	cmp a.kg c.kg
	KG_WRITER_FRAME_HOLD=16384 graphsim a.kg > sc.kg
	cmp sa.kg sc.kg
	[ "$(graphcat a.kg | jq -c 'select(.r == "end")' | wc -l)" -eq 1 ]
}

@test "graph-deps --merge: of several bad inputs, read at once, the first is told, alone" {
	split_two
	printf 'not a graph' > junk.kg
	run -1 --separate-stderr graph-deps --merge -o job.kg r0.kg missing.kg junk.kg
	[ "$stderr" = "graph-deps: missing.kg: No such file or directory" ]
	run -1 --separate-stderr graph-deps --merge -o job.kg r0.kg junk.kg missing.kg r0.kg
	[ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
	[[ "$stderr" == "graph-deps: junk.kg: "* ]]
	[ ! -e job.kg ]
}

@test "graphsim: the merged DLRM job replays every rank and the job within 2% of the trace" {
	dlrm_job
	graphsim job.kg | graphstat --csv > stat.csv
	# rows: ranks 0..7 and "job"; columns found by name
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		{
			r = $col["rank"]; e = $col["error_pct"]
			if (r == "job") job++
			else if (r ~ /^[0-9]+$/) ranks++
			else { print "bad rank " r; bad = 1 }
			if (e !~ /^-?[0-9.]+$/ || e > 2 || e < -2) { print "rank " r ": error " e; bad = 1 }
		}
		END { if (ranks != 8 || job != 1) { print ranks " ranks, " job " job rows"; bad = 1 }
			exit bad }' stat.csv
}

@test "graph-deps --merge: ranks of two jobs (an A100 rank of a world of 2, a V100 rank of a world of 8) stop it, with nothing written" {
	need_traces
	kineto2graph -q -o a100.kg "$TRACES"/hta_ddp_2rank_a100_nccl_meta/nccl_data.json.gz
	kineto2graph -q -o v100.kg "$TRACES"/param_dlrm_8rank_v100/kineto/worker1_*.json.gz
	run -1 --separate-stderr graph-deps --merge -o job.kg v100.kg a100.kg
	[ "$stderr" = "graph-deps: a100.kg: section 0: a world of 2 ranks, but v100.kg section 0 is of 8: not ranks of one job" ]
	[ ! -e job.kg ]
}

@test "graph-deps --merge: a rank past the world size it records is not of the job" {
	echo '{"n":"K","k":"kern","ts":100,"d":10}' | mkrank 5 2 > r5.kg
	run -1 --separate-stderr graph-deps --merge r5.kg
	[ "$stderr" = "graph-deps: r5.kg: section 0: rank 5 of a world of 2" ]
}

@test "graph-deps --merge: ranks none of whose collectives match are warned about, loudly but not fatally" {
	# the same broadcast on ranks 0 and 1 of 3, an all-reduce only on 2:
	# rank 2 matched nothing
	echo '{"n":"B/0","coll":"broadcast","ts":100,"d":10,"gs":2,"pgr":"[0, 1]"}' | mkrank 0 3 > r0.kg
	echo '{"n":"B/1","coll":"broadcast","ts":100,"d":10,"gs":2,"pgr":"[0, 1]"}' | mkrank 1 3 > r1.kg
	echo '{"n":"A/2","coll":"allreduce","ts":100,"d":10,"gs":2,"pgr":"[2, 3]"}' | mkrank 2 3 > r2.kg
	run -0 --separate-stderr graph-deps --merge -o job.kg r0.kg r1.kg r2.kg
	[ "$stderr" = "graph-deps: warning: r2.kg: section 0: rank 2: none of its 1 collectives matched another rank's: is it of this job?" ]
	run -0 --separate-stderr graph-deps -q --merge -o job.kg r0.kg r1.kg r2.kg
	[ "$stderr" = "" ]
}

@test "graph-deps --merge: ranks that ran on different GPUs are warned about; the job section names the GPU only when all agree" {
	need_traces
	for r in 0 1 2 3 4 5 6 7; do
		kineto2graph -q -o v$r.kg "$TRACES"/param_dlrm_8rank_v100/kineto/worker${r}_*.json.gz
	done
	# the same ranks, one of them said to have run on an A100
	graphcat v2.kg | sed '1s/"gpu":"Tesla V100-SXM2-32GB"/"gpu":"NVIDIA A100"/' | mkstream > a2.kg
	run -0 --separate-stderr graph-deps --merge -o same.kg v?.kg
	[ "$stderr" = "" ]
	[ "$(graphcat same.kg | head -1 | jq -r '[.gpu, .gpu_mem, .gpu_sms] | @tsv')" = "$(printf 'Tesla V100-SXM2-32GB\t34079899648\t80')" ]
	run -0 --separate-stderr graph-deps --merge -o mixed.kg v[01].kg a2.kg v[3-7].kg
	[ "$stderr" = "graph-deps: warning: a2.kg: section 0: rank 2 ran on NVIDIA A100, but rank 0 (v0.kg section 0) on Tesla V100-SXM2-32GB: not ranks of one job?" ]
	[ "$(graphcat mixed.kg | head -1 | jq -r '.gpu // "none"')" = none ]
}

@test "graph-deps --merge: each rank's Input types (ty) keep their text, as its shapes do" {
	# the string ids are the section's own: merging renumbers them, and
	# a task's ty must name the same text after as before (it named
	# rank 0's strings before this was fixed)
	tracegen --preset tiny --dp 1 --pp 1 --iterations 1 -d tg
	kineto2graph -q -o r1.kg tg/rank-1.json.gz
	kineto2graph -q tg/*.json.gz | graph-deps --merge > job.kg
	graphcat -r r1.kg | jq -r 'select(.r == "task" and .ty != null) | "\(.sh) \(.ty)"' | sort > own
	graphcat -r job.kg | jq -r --argjson p "$(graphcat job.kg | jq -s '[.[] | select(.r == "proc" and .rank == 1) | .id]')" \
	    'select(.r == "task" and .ty != null and (.p as $x | $p | index($x))) | "\(.sh) \(.ty)"' | sort > merged
	[ -s own ]
	cmp own merged
}

@test "graph-deps --merge: an AMD job's RCCL kernels, typed by their ops' metadata, rendezvous across ranks" {
	# tests/fixtures/rocm: two MI300X ranks; each launches RCCL's
	# ncclDevKernel_Generic (hipExtLaunchKernel) and an MSCCL kernel
	# (hipLaunchKernel) under record_param_comms ops whose metadata
	# numbers are strings ("1048576", "2", "0"), as ROCm writes them.
	for r in 0 1; do
		run -0 kineto2graph -q -o r$r.kg "$FIX/rocm/rccl_rank$r.json"
	done
	run -0 graph-deps --merge -o job.kg r0.kg r1.kg
	# Neither name says its type: the ops' Collective name does; bytes
	# are the elements times BFloat16's 2.
	graphcat -r job.kg | jq -r 'select(.r == "task" and .k == "coll") |
		"\(.n | split("(")[0]) \(.coll) \(.by) \(.seq) \(.pgr)"' >colls
	[ "$(cat colls)" = "ncclDevKernel_Generic allreduce 2097152 0 [0, 1]
mscclKernel_Sum_hip_bfloat16_Simple_false allgather 1048576 1 [0, 1]
ncclDevKernel_Generic allreduce 2097152 0 [0, 1]
mscclKernel_Sum_hip_bfloat16_Simple_false allgather 1048576 1 [0, 1]" ]
	# one rank edge for each of the two collectives, matched by Seq
	[ "$(graphcat job.kg | jq -c 'select(.r == "edge" and .k == "rank")' | wc -l)" = 2 ]
	[ "$(graphcat job.kg | jq -r 'select(.r == "edge" and .k == "rank") | .how // "trace"' | sort -u)" = trace ]
	# and the job replays as traced
	run -0 graphsim -o sim.kg job.kg
	run -0 graphstat sim.kg
	[ "$(grep -c '^[01j].*+0\.00 |' <<<"$output")" = 3 ]
	# Without the ops' metadata the kernels are collectives of no type,
	# and still meet, by order on their stream
	for r in 0 1; do
		jq '.traceEvents |= map(if .name == "record_param_comms" then .args = {} else . end)' \
		    "$FIX/rocm/rccl_rank$r.json" >bare$r.json
		run -0 kineto2graph -q -o bare$r.kg bare$r.json
	done
	run -0 graph-deps --merge -o bare.kg bare0.kg bare1.kg
	[ "$(graphcat bare.kg | jq -r 'select(.r == "task" and .k == "coll") | .coll // "none"' | sort -u)" = none ]
	[ "$(graphcat bare.kg | jq -r 'select(.r == "edge" and .k == "rank") | .how')" = "inferred
inferred" ]
}

# The merge's cost is linear in sections and iterations: each test's input
# took the quadratic merge ten times its bound (30 s and minutes here); the
# linear one takes a tenth of it. Timing means nothing under the sanitizers.
no_sanitizer() {
	if grep -q fsanitize "$ROOT/build/flags" 2>/dev/null; then
		skip "timing under a sanitizer build"
	fi
}

@test "graph-deps --merge: 131,072 sections merge in time linear in them" {
	no_sanitizer
	"$ROOT/tests/tools/hostile" many-sections > many.kg
	run -0 --separate-stderr timeout 15 graph-deps --merge -q -o job.kg many.kg
	[ "$(graphcat job.kg | head -1 | jq '.ranks | length')" -eq 131072 ]
}

@test "graph-deps --merge: 262,144 iterations of 8 sections merge in time linear in them" {
	no_sanitizer
	"$ROOT/tests/tools/hostile" many-iters > iters.kg
	run -0 --separate-stderr timeout 5 graph-deps --merge -q -o job.kg iters.kg
	[ "$(graphcat job.kg | head -1 | jq '.iters | length')" -eq 262144 ]
}
