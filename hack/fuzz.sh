#!/usr/bin/env bash
# make fuzz: every fuzz target of the module (a `func FuzzX(f *testing.F)`
# in a _test.go file), one after another, each for FUZZTIME (1m unless
# given). `go test` runs only their seeds; this searches further. A target
# that fails stops the run: go test has written the input to the package's
# testdata/fuzz/, where `go test -run 'FuzzX/NAME' ./PKG` replays it.
#
# Do not stop a target by killing its worker process: go then records the
# input in flight as a failure.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${ROOT}"

FUZZTIME="${FUZZTIME:-1m}"
GO="${GO:-go}"

targets=()
while IFS=: read -r file line; do
    name="${line#func }"
    targets+=("./$(dirname "${file}") ${name%%(*}")
done < <(git grep --untracked -o '^func Fuzz[A-Za-z0-9_]*(' -- '*_test.go')
[[ ${#targets[@]} -gt 0 ]] || die "no fuzz target found in the module's _test.go files"

for t in "${targets[@]}"; do
    read -r pkg name <<<"${t}"
    log "${name} in ${pkg} for ${FUZZTIME}"
    "${GO}" test -run '^$' -fuzz "^${name}\$" -fuzztime "${FUZZTIME}" -fuzzminimizetime 5s "${pkg}"
done
log "${#targets[@]} fuzz targets ran ${FUZZTIME} each without a failure"
