#!/usr/bin/env bash
# Fails when the generated code or CRDs differ from what the API types in
# pkg/apis produce. Leaves the working tree as it found it.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${ROOT}"

GENERATED=(pkg/apis pkg/generated deploy/crd hack/crd)
snapshot="$(mktemp -d)"
trap 'rm -rf "${snapshot}"' EXIT

for d in "${GENERATED[@]}"; do
    mkdir -p "${snapshot}/before/${d}"
    if [ -d "${d}" ]; then
        cp -a "${d}/." "${snapshot}/before/${d}/"
    fi
done

"${ROOT}/hack/update-codegen.sh" >"${snapshot}/update.log" 2>&1 || {
    cat "${snapshot}/update.log" >&2
    echo "verify-codegen: hack/update-codegen.sh failed" >&2
    exit 1
}

stale=0
for d in "${GENERATED[@]}"; do
    if ! diff -Nru "${snapshot}/before/${d}" "${d}" >"${snapshot}/diff" 2>&1; then
        echo "verify-codegen: ${d} is out of date; run 'make generate' and commit the result:" >&2
        head -50 "${snapshot}/diff" >&2
        stale=1
    fi
    # Put the tree back as it was, whatever the outcome.
    rm -rf "${d}"
    mkdir -p "${d}"
    cp -a "${snapshot}/before/${d}/." "${d}/"
done

if [ "${stale}" -ne 0 ]; then
    exit 1
fi
echo "verify-codegen: generated code and CRDs are up to date"
