#!/usr/bin/env bats
# graphcat, and through it the stream codec's reader: the STYLE.md
# checklist, truncated and corrupt streams, versions.

load helpers

mkstream() { # JSON lines on stdin -> a graph stream on stdout
	"$ROOT/tests/tools/jsonl2kg" | zstd -q -c
}

setup_file() {
	kineto2graph -q "$ROOT/examples/ddp-step.json" > "$BATS_FILE_TMPDIR/ex.kg"
}

@test "graphcat: --help prints the usage on stdout and exits 0" {
	run -0 --separate-stderr graphcat --help
	[ "${lines[0]}" = "usage: graphcat [-r] [FILE ...]" ]
	[ -z "$stderr" ]
}

@test "graphcat: --version names the tool" {
	run -0 graphcat --version
	[[ $output == "graphcat (kgraph) "* ]]
}

@test "graphcat: an unknown option is a usage error" {
	run -2 --separate-stderr graphcat --bogus
	[ -z "$output" ]
	[[ ${stderr_lines[1]} == "usage: graphcat "* ]]
}

@test "graphcat: a missing file is named in the error" {
	run -1 --separate-stderr graphcat nosuch.kg
	[ "$stderr" = "graphcat: nosuch.kg: No such file or directory" ]
}

@test "graphcat: empty input is an error, not an empty stream" {
	run -1 --separate-stderr graphcat < /dev/null
	[ "$stderr" = "graphcat: -: empty input, not a graph stream" ]
}

@test "graphcat: garbage is not a graph stream" {
	printf 'hello world, not zstd\n' > junk
	run -1 --separate-stderr graphcat junk
	[ "$stderr" = "graphcat: junk: not a graph stream (no zstd frame)" ]
}

@test "graphcat: a stream cut inside a zstd frame is truncated" {
	head -c 100 "$BATS_FILE_TMPDIR/ex.kg" > cut.kg
	run -1 --separate-stderr graphcat cut.kg
	[ "$stderr" = "graphcat: cut.kg: truncated graph stream (ends inside a zstd frame)" ]
}

@test "graphcat: a stream cut inside a record is truncated" {
	graphcat "$BATS_FILE_TMPDIR/ex.kg" | "$ROOT/tests/tools/jsonl2kg" | head -c 300 | zstd -q -c > cut.kg
	run -1 --separate-stderr graphcat cut.kg
	[[ $stderr == "graphcat: cut.kg: truncated graph stream (ends inside record "*")" ]]
}

@test "graphcat: a section without its end record is truncated" {
	graphcat "$BATS_FILE_TMPDIR/ex.kg" | grep -v '"r":"end"' | mkstream > noend.kg
	run -1 --separate-stderr graphcat noend.kg
	[ "$stderr" = "graphcat: noend.kg: truncated graph stream (section ends without its end record)" ]
	# everything before the cut was still printed
	[ "${#lines[@]}" -gt 10 ]
}

@test "graphcat: a checksum mismatch is corruption" {
	cp "$BATS_FILE_TMPDIR/ex.kg" bad.kg
	size=$(stat -c %s bad.kg)
	# flip a byte in the middle of the compressed data
	printf '\x55' | dd of=bad.kg bs=1 seek=$((size / 2)) conv=notrunc status=none
	run -1 --separate-stderr graphcat bad.kg
	[[ $stderr == "graphcat: bad.kg: corrupt graph stream"* ]]
}

@test "graphcat: an unknown major version is refused" {
	echo '{"r":"header","format":"kgraph","major":2,"minor":0,"producer":"future","unit":"ns"}' | mkstream > v2.kg
	run -1 --separate-stderr graphcat v2.kg
	[ "$stderr" = "graphcat: v2.kg: unsupported graph stream version 2 (this reader knows 1)" ]
}

@test "graphcat: a record before the header is an error" {
	echo '{"r":"str","id":0,"s":"x"}' | mkstream > nohdr.kg
	run -1 --separate-stderr graphcat nohdr.kg
	[ "$stderr" = "graphcat: nohdr.kg: record 1: expected a header" ]
}

@test "graphcat: unknown fields and record types are passed over, not fatal" {
	mkstream > extra.kg <<-'EOF'
	{"r":"header","format":"kgraph","major":1,"minor":7,"producer":"t","unit":"ns","future":[1,2]}
	{"r":"str","id":0,"s":"k"}
	{"r":"proc","id":0,"k":"stream","pid":0,"tid":7,"color":"red"}
	{"r":"task","id":0,"p":0,"k":"kern","n":0,"d":5,"ts":0,"it":-1,"zzz":1}
	{"r":"hologram","x":1}
	{"r":"end","tasks":1,"edges":0,"procs":1,"strs":1}
	EOF
	run -0 --separate-stderr graphcat -r extra.kg
	[ "${#lines[@]}" -eq 5 ]
	[ "${lines[2]}" = '{"r":"task","id":0,"p":0,"k":"kern","n":"k","d":5,"ts":0,"it":-1,"zzz":1}' ]
	[ "${lines[3]}" = '{"r":"hologram","x":1}' ]
}

@test "graphcat: a missing required field names the record" {
	mkstream > miss.kg <<-'EOF'
	{"r":"header","format":"kgraph","major":1,"minor":0,"producer":"t","unit":"ns"}
	{"r":"str","id":0,"s":"k"}
	{"r":"proc","id":0,"k":"stream","pid":0,"tid":7}
	{"r":"task","id":0,"p":0,"k":"kern","n":0,"ts":0,"it":-1}
	EOF
	run -1 --separate-stderr graphcat miss.kg
	[ "$stderr" = "graphcat: miss.kg: record 4: missing field d" ]
}

@test "graphcat: end-record counts that disagree are corruption" {
	mkstream > count.kg <<-'EOF'
	{"r":"header","format":"kgraph","major":1,"minor":0,"producer":"t","unit":"ns"}
	{"r":"end","tasks":3,"edges":0,"procs":0,"strs":0}
	EOF
	run -1 --separate-stderr graphcat count.kg
	[ "$stderr" = "graphcat: count.kg: corrupt graph stream (section says 3 tasks, found 0)" ]
}

@test "graphcat: two concatenated streams read as two sections" {
	cat "$BATS_FILE_TMPDIR/ex.kg" "$BATS_FILE_TMPDIR/ex.kg" > two.kg
	run -0 graphcat two.kg
	[ "$(grep -c '"r":"header"' <<< "$output")" -eq 2 ]
	[ "$(grep -c '"r":"end"' <<< "$output")" -eq 2 ]
}

@test "graphcat: stdin gives the same output as a file operand" {
	graphcat "$BATS_FILE_TMPDIR/ex.kg" > a
	graphcat < "$BATS_FILE_TMPDIR/ex.kg" > b
	graphcat - < "$BATS_FILE_TMPDIR/ex.kg" > c
	cmp a b
	cmp a c
}

@test "graphcat: --resolve replaces string ids and drops str records" {
	run -0 graphcat -r "$BATS_FILE_TMPDIR/ex.kg"
	if grep -q '"r":"str"' <<< "$output"; then
		return 1
	fi
	grep -q '"n":"ampere_sgemm_128x64_tn"' <<< "$output"
}

@test "graphcat: each line is one JSON object" {
	graphcat "$BATS_FILE_TMPDIR/ex.kg" > out
	[ "$(jq -c . out | wc -l)" -eq "$(wc -l < out)" ]
}

@test "graphcat: a full disk is a write error" {
	run -1 --separate-stderr bash -c 'graphcat "$1" > /dev/full' _ "$BATS_FILE_TMPDIR/ex.kg"
	[[ $stderr == "graphcat: write error: "* ]]
}

@test "graphcat: a reader that stops early gets no complaint" {
	run -0 --separate-stderr bash -c "graphcat '$BATS_FILE_TMPDIR/ex.kg' | head -n 1"
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 1 ]
}
