#!/usr/bin/env bats
# graph-deps: the checklist, --check on good and broken graphs, --summary
# counts, --drop for ablations.

load helpers

mkstream() {
	"$ROOT/tests/tools/jsonl2kg" | zstd -q -c
}

# A three-task graph; extra edge lines on stdin are appended before the end.
tiny() {
	{
		cat <<-'EOF'
		{"r":"header","format":"kgraph","major":1,"minor":0,"producer":"t","unit":"ns","rank":3}
		{"r":"str","id":0,"s":"a"}
		{"r":"str","id":1,"s":"b"}
		{"r":"str","id":2,"s":"c"}
		{"r":"proc","id":0,"k":"thread","pid":1,"tid":1}
		{"r":"task","id":0,"p":0,"k":"cpu","n":0,"d":10,"ts":0,"it":-1}
		{"r":"task","id":1,"p":0,"k":"cpu","n":1,"d":10,"ts":20,"it":-1}
		{"r":"task","id":2,"p":0,"k":"cpu","n":2,"d":10,"ts":40,"it":-1}
		{"r":"edge","src":0,"dst":1,"k":"thread","dl":10}
		{"r":"edge","src":1,"dst":2,"k":"thread","dl":10}
		EOF
		cat
	} > body
	n=$(grep -c '"r":"edge"' body)
	{ cat body; echo "{\"r\":\"end\",\"tasks\":3,\"edges\":$n,\"procs\":1,\"strs\":3}"; } | mkstream
}

setup_file() {
	kineto2graph -q "$ROOT/examples/ddp-step.json" > "$BATS_FILE_TMPDIR/ex.kg"
}

@test "graph-deps: --help prints the usage on stdout and exits 0" {
	run -0 --separate-stderr graph-deps --help
	[[ ${lines[0]} == "usage: graph-deps --check | --summary | --drop "* ]]
}

@test "graph-deps: no mode, or two, is a usage error" {
	run -2 --separate-stderr graph-deps "$BATS_FILE_TMPDIR/ex.kg"
	[ "${stderr_lines[0]}" = "graph-deps: give exactly one of --check, --summary, --drop, --merge" ]
	run -2 graph-deps --check --summary "$BATS_FILE_TMPDIR/ex.kg"
}

@test "graph-deps: an unknown option or dependency kind is a usage error" {
	run -2 graph-deps --frobnicate
	run -2 --separate-stderr graph-deps --drop thread,bogus
	[ "${stderr_lines[0]}" = "graph-deps: unknown dependency kind 'bogus'" ]
}

@test "graph-deps: a missing file is named in the error" {
	run -1 --separate-stderr graph-deps --check nosuch.kg
	[ "$stderr" = "graph-deps: nosuch.kg: No such file or directory" ]
}

@test "graph-deps: empty and garbage input are errors" {
	run -1 --separate-stderr graph-deps --check < /dev/null
	[ "$stderr" = "graph-deps: -: empty input, not a graph stream" ]
	echo junk > junk
	run -1 --separate-stderr graph-deps --summary junk
	[ "$stderr" = "graph-deps: junk: not a graph stream (no zstd frame)" ]
}

@test "graph-deps: a truncated stream is an error" {
	head -c 100 "$BATS_FILE_TMPDIR/ex.kg" > cut.kg
	run -1 --separate-stderr graph-deps --check cut.kg
	[ "$stderr" = "graph-deps: cut.kg: truncated graph stream (ends inside a zstd frame)" ]
}

@test "graph-deps: --check passes a sound graph and counts its parts" {
	tiny < /dev/null > ok.kg
	run -0 --separate-stderr graph-deps --check ok.kg
	[ "$output" = "ok.kg: section 0 (rank 3): 3 tasks, 2 edges, 0 cycles, 0 unknown, 0 backwards" ]
	[ -z "$stderr" ]
}

@test "graph-deps: --check names the tasks on a cycle and exits 1" {
	echo '{"r":"edge","src":2,"dst":0,"k":"handoff"}' | tiny > cyc.kg
	run -1 --separate-stderr graph-deps --check cyc.kg
	# a -> b -> c -> a: every task is on it
	[ "$stderr" = "graph-deps: cyc.kg: section 0 (rank 3): cycle through 3 tasks: a#0 -> b#1 -> c#2 -> a#0" ]
	[[ $output == *"1 cycle, 0 unknown"* ]]
}

@test "graph-deps: --check reports edges to unknown tasks and exits 1" {
	echo '{"r":"edge","src":1,"dst":9,"k":"sync"}' | tiny > unk.kg
	run -1 --separate-stderr graph-deps --check unk.kg
	[ "$stderr" = "graph-deps: unk.kg: section 0 (rank 3): 1 edge names unknown tasks" ]
}

@test "graph-deps: --check counts backwards edges by kind without failing" {
	# c (ts 40) -> b (ts 20): b started before c ended
	echo '{"r":"edge","src":2,"dst":1,"k":"launch"}' | tiny > back.kg
	run -1 graph-deps --check back.kg  # it is also a cycle: b -> c -> b
	echo '{"r":"edge","src":1,"dst":0,"k":"launch"}' | tiny > back2.kg
	run -1 graph-deps --check back2.kg
	# a backwards edge alone: 0 -> 2 is forwards; add a fourth task instead
	mkstream > back3.kg <<-'EOF'
	{"r":"header","format":"kgraph","major":1,"minor":0,"producer":"t","unit":"ns"}
	{"r":"str","id":0,"s":"x"}
	{"r":"proc","id":0,"k":"thread","pid":1,"tid":1}
	{"r":"proc","id":1,"k":"stream","pid":0,"tid":7}
	{"r":"task","id":0,"p":0,"k":"rt","n":0,"d":30,"ts":0,"it":-1}
	{"r":"task","id":1,"p":1,"k":"kern","n":0,"d":5,"ts":20,"it":-1}
	{"r":"edge","src":0,"dst":1,"k":"launch"}
	{"r":"end","tasks":2,"edges":1,"procs":2,"strs":1}
	EOF
	run -0 graph-deps --check back3.kg
	[ "$output" = "back3.kg: section 0: 2 tasks, 1 edges, 0 cycles, 0 unknown, 1 backwards (launch 1)" ]
}

@test "graph-deps: --summary counts edges by kind and provenance" {
	run -0 graph-deps --summary "$BATS_FILE_TMPDIR/ex.kg"
	# the example: 13 thread edges (leaves on two threads: 9 on the main
	# thread, 4 on autograd's), 10 launches, 8 stream-order edges on
	# stream 7, 2 event waits named by cuda_sync records, 2 hand-offs
	# (main thread to autograd's first launch, autograd's last launch back
	# to the optimizer's first call), and 1 sync: loss.item()'s blocking
	# copy holds back zero_grad
	grep -qx 'thread   trace             13' <<< "$output"
	grep -qx 'handoff  inferred           2' <<< "$output"
	grep -qx 'launch   trace             10' <<< "$output"
	grep -qx 'stream   trace              8' <<< "$output"
	grep -qx 'event    explicit           2' <<< "$output"
	grep -qx 'sync     trace              1' <<< "$output"
	grep -qx 'total                      36' <<< "$output"
}

@test "graph-deps: --drop removes those kinds and keeps the rest" {
	graph-deps --drop event,launch "$BATS_FILE_TMPDIR/ex.kg" > d.kg
	run -0 graph-deps --summary d.kg
	if grep -q '^event\|^launch' <<< "$output"; then
		echo "dropped kinds still there: $output"
		return 1
	fi
	grep -qx 'total                      24' <<< "$output"
	# tasks are untouched, the header records the tool
	[ "$(graphcat d.kg | grep -c '"r":"task"')" -eq "$(graphcat "$BATS_FILE_TMPDIR/ex.kg" | grep -c '"r":"task"')" ]
	graphcat d.kg | head -n 1 | jq -e '.tools == ["kineto2graph 0.1", "graph-deps 0.1"]'
}

@test "graph-deps: --drop refuses a terminal and writes -o atomically" {
	graph-deps --drop sync -o out.kg "$BATS_FILE_TMPDIR/ex.kg"
	graphcat out.kg > /dev/null
	echo junk > junk
	run -1 graph-deps --drop sync -o out2.kg junk
	[ ! -e out2.kg ]
	[ -z "$(ls out2.kg.tmp* 2>/dev/null)" ]
}

@test "graph-deps: stdin gives the same answer as a file operand" {
	a=$(graph-deps --summary "$BATS_FILE_TMPDIR/ex.kg" | tail -n +2)
	b=$(graph-deps --summary < "$BATS_FILE_TMPDIR/ex.kg" | tail -n +2)
	[ "$a" = "$b" ]
}

@test "graph-deps: a full disk is a write error" {
	run -1 --separate-stderr bash -c 'graph-deps --summary "$1" > /dev/full' _ "$BATS_FILE_TMPDIR/ex.kg"
	[[ $stderr == "graph-deps: stdout: write error: "* ]]
	run -1 --separate-stderr bash -c 'graph-deps --drop sync "$1" > /dev/full' _ "$BATS_FILE_TMPDIR/ex.kg"
	[[ $stderr == "graph-deps: stdout: "* ]]
}

@test "graph-deps: a reader that stops early gets no complaint" {
	run -0 --separate-stderr bash -c "graph-deps --summary '$BATS_FILE_TMPDIR/ex.kg' | head -n 1"
	[ -z "$stderr" ]
}

@test "graph-deps: every shared trace converts into a graph without cycles or unknown tasks" {
	need_traces
	find "$TRACES" -name '*.json*' ! -name '*_et.json.gz' ! -name 'MANIFEST.json' | sort > list
	while read -r f; do
		kineto2graph -q "$f" | graph-deps --check > /dev/null || { echo "fails: $f"; return 1; }
	done < list
}
