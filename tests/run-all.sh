#!/bin/sh
# Run every test: the cmocka binaries given as arguments, the command-line tests in
# tests/cli/, and the Python tests in tests/python/ (with .venv's python when present).
# Prints one closing line "N passed, N failed, N skipped" counting the suites.
# Usage: tests/run-all.sh [--unit-only] build/test_* ...
unit_only=0
[ "${1:-}" = "--unit-only" ] && { unit_only=1; shift; }
passed=0
failed=0
skipped=0
failed_names=""
skipped_names=""
# A suite that exits 77 could not run here (it printed why): skipped, not failed.
run() {
    name=$1; shift
    echo "=== $name"
    start=$(date +%s)
    "$@"
    rc=$?
    if [ $rc -eq 0 ]; then passed=$((passed + 1)); r=ok
    elif [ $rc -eq 77 ]; then skipped=$((skipped + 1)); skipped_names="$skipped_names $name"; r=SKIPPED
    else failed=$((failed + 1)); failed_names="$failed_names $name"; r=FAILED; fi
    echo "=== $name: $r ($(( $(date +%s) - start )) s)"
}
for t in "$@"; do run "$t" "$t"; done
if [ $unit_only -eq 0 ]; then
    for t in tests/cli/*.sh; do [ -f "$t" ] && run "$t" sh "$t"; done
    PY=python3
    [ -x .venv/bin/python ] && PY=.venv/bin/python
    if ls tests/python/test_*.py >/dev/null 2>&1; then
        run "pytest tests/python" "$PY" -m pytest -q tests/python
    fi
fi
[ -n "$failed_names" ] && echo "failed suites:$failed_names"
[ -n "$skipped_names" ] && echo "skipped suites (see their messages):$skipped_names"
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
