#!/usr/bin/env bash
# make e2e: the shipped pieces on a real control plane. Starts a fresh local
# cluster (hack/local-cluster.sh) in its own state directory, builds the
# binaries, runs test/e2e (build tag e2e) and takes the cluster down again
# (E2E_KEEP=1 keeps it, and the test's work directory, for a post-mortem).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export CLUSTER_DIR="${E2E_CLUSTER_DIR:-/tmp/variant-controller-e2e}"
if [[ -d "${CLUSTER_DIR}" ]]; then
    echo "e2e: removing the cluster left in ${CLUSTER_DIR} by an earlier run"
    hack/local-cluster.sh down
fi
cleanup() {
    local rc=$?
    if [[ -n "${E2E_KEEP:-}" ]]; then
        echo "e2e: E2E_KEEP is set; the cluster keeps running: CLUSTER_DIR=${CLUSTER_DIR} hack/local-cluster.sh env"
    else
        hack/local-cluster.sh down || true
    fi
    exit "${rc}"
}
trap cleanup EXIT

start=${SECONDS}
hack/local-cluster.sh up
eval "$(hack/local-cluster.sh env)"

mkdir -p bin
for b in variant-controller porchsim-apiserver variantctl; do
    CGO_ENABLED=0 go build -trimpath -o "bin/${b}" "./cmd/${b}"
done

E2E_BIN="${PWD}/bin" KUBECTL="$(command -v kubectl)" \
    go test -tags e2e -count=1 -v -timeout 20m ./test/e2e/
echo "e2e: passed in $((SECONDS - start))s"
