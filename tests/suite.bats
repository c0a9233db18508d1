#!/usr/bin/env bats
# tests/run (make check): prove's summary, then the skipped tests
# counted and named with their reasons, and prove's status.

load helpers

@test "tests/run: counts and names the tests that skipped, with their reasons" {
	# (printf: an @test line in a heredoc would be this file's)
	printf '%s\n' '@test "a: passes" { true; }' \
	    '@test "a: needs a thing" { skip "no thing (apt-get install thing)"; }' \
	    '@test "a: needs another" { skip "no other"; }' > a.bats
	printf '@test "b: passes" { true; }\n' > b.bats
	run -0 --separate-stderr "$ROOT/tests/run" "$PWD/a.bats" "$PWD/b.bats"
	[ "${lines[-4]}" = "Result: PASS" ]
	[ "${lines[-3]}" = "Skipped: 2 tests (README, Tests: what they need):" ]
	[ "${lines[-2]}" = "  a.bats: a: needs a thing -- no thing (apt-get install thing)" ]
	[ "${lines[-1]}" = "  a.bats: a: needs another -- no other" ]
	run -0 --separate-stderr "$ROOT/tests/run" "$PWD/b.bats"
	[ "${lines[-1]}" = "Skipped: none" ]
}

@test "tests/run: a failing test fails the run, its skips still named" {
	printf '@test "c: fails" { false; }\n@test "c: skips" { skip "why"; }\n' > c.bats
	run -1 --separate-stderr "$ROOT/tests/run" "$PWD/c.bats"
	[ "${lines[-2]}" = "Skipped: 1 test (README, Tests: what they need):" ]
	[ "${lines[-1]}" = "  c.bats: c: skips -- why" ]
}
