#!/usr/bin/env bats
# The man pages as man(1) shows them (groff's mdoc, as `man -l` renders
# a page) and as mandoc lints them.

load helpers

# A page as `man -l` renders it, one paragraph a line.
render() {
	LC_ALL=C.UTF-8 groff -mandoc -Tutf8 -P-cbou -rLL=400n "$1" 2> /dev/null
}

@test "man pages: no quote opens inside another (a macro's enclosure left open over the next)" {
	command -v groff > /dev/null || skip "no groff (apt-get install groff-base)"
	for f in "$ROOT"/doc/*.1; do
		# groff's Ql encloses the rest of its line: ".Pq Ql a , Ql b"
		# shows as (‘a, ‘b’’)
		if render "$f" | LC_ALL=C.UTF-8 grep -nP '‘[^’]*‘'; then
			echo "$f: a quote opened inside another" >&2
			return 1
		fi
	done
}

@test "man pages: quotes inside a macro's argument are shown" {
	command -v groff > /dev/null || skip "no groff (apt-get install groff-base)"
	# opmodel's sweep lines are JSON: each key in its quotes
	render "$ROOT/doc/opmodel.1" | grep -qF '{"meta": {"gpu": ..., "sms": ...}}'
	render "$ROOT/doc/opmodel.1" | grep -qF '{"op": "mm", "layout": "nt", "m": ..., "n": ..., "k": ..., "us": ...}'
	render "$ROOT/doc/graph2chrome.1" | grep -qF '(‘"ph": "i"’, ‘"s": "t"’)'
}

@test "man pages: mandoc finds no warning" {
	command -v mandoc > /dev/null || skip "no mandoc (apt-get install mandoc)"
	for f in "$ROOT"/doc/*.1; do
		run -0 mandoc -Tlint -W warning "$f"
		[ -z "$output" ]
	done
}
