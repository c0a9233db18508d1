#!/usr/bin/env bats
# The README as a newcomer reads it, top to bottom.

load helpers

@test "README: bin/ is put on PATH before the first example that calls a tool by name" {
	# the examples are the indented lines; a tool's name first on one
	tools=$(sed -n 's/^TOOLS = //p' "$ROOT/Makefile" | tr ' ' '|')
	[ -n "$tools" ]
	first=$(grep -nE "^    ($tools) " "$ROOT/README" | head -1 | cut -d: -f1)
	path=$(grep -nF 'export PATH=$PWD/bin:$PATH' "$ROOT/README" | head -1 | cut -d: -f1)
	[ -n "$first" ] && [ -n "$path" ]
	[ "$path" -lt "$first" ]
}
