#!/usr/bin/env bash
# make e2e: the shipped pieces on a real control plane, against porchsim and,
# when the user brings one, a real Porch server. Starts a fresh local cluster
# (hack/local-cluster.sh) in its own state directory with the audit log on
# (hack/e2e/audit-policy.yaml), builds our binaries, runs test/e2e (build tag
# e2e), prints the tests' report and takes the cluster down again (E2E_KEEP=1
# keeps it, and the tests' work directory, for a post-mortem). Prints how
# long each stage took.
#
# Environment (all optional):
#   PORCH_BIN          a Porch API server binary (built from Porch's
#                      cmd/porch by the user, from Porch's own instructions):
#                      every scenario runs against it too, and the two
#                      backends are compared step by step
#   PORCH_MANIFESTS    with PORCH_BIN: a directory holding Porch's CRDs
#                      (Repository, FunctionConfig, PackageRev) and its
#                      FunctionConfigs, from the same Porch
#   E2E_BACKENDS       which backends to run (porchsim, porch; default: all
#                      available)
#   E2E_CLUSTER_DIR    the cluster's state directory (default
#                      /tmp/variant-controller-e2e); a leftover one is taken
#                      down and removed first
#   E2E_REPORT         the report file (default ${CLUSTER_DIR}/report.txt,
#                      which goes with the cluster unless E2E_KEEP is set)
#   E2E_RUN            go test -run pattern (default: every test)
#   E2E_TIMEOUT        go test -timeout (default 40m)
#   E2E_KEEP           non-empty: leave the cluster, the logs and the tests'
#                      work directory in place
#
# A Porch server binds :8080 (its FunctionConfig manager's metrics; not
# configurable), so with PORCH_BIN the port must be free; everything the
# tests start stays off :8080 and :8081.
source "$(dirname "${BASH_SOURCE[0]}")/lib/process.sh"
cd "${ROOT}"

export CLUSTER_DIR="${E2E_CLUSTER_DIR:-/tmp/variant-controller-e2e}"
REPORT="${E2E_REPORT:-${CLUSTER_DIR}/report.txt}"
TEST_TIMEOUT="${E2E_TIMEOUT:-40m}"
# Waiting gracefully buys nothing for state that is removed right after:
# kube-controller-manager's garbage collector keeps watches open through the
# aggregator, and the kube-apiserver sometimes took 13 s to exit after them.
export STOP_TIMEOUT="${STOP_TIMEOUT:-5}"

# die exits 2 here, not 1 as lib/init.sh's: a run that could not start,
# told apart from failed tests (go test exits 1).
die() {
    log "$*"
    exit 2
}

# What the user brought, checked before anything slow.
PORCH_BIN="${PORCH_BIN:-}"
PORCH_MANIFESTS="${PORCH_MANIFESTS:-}"
if [[ -n "${PORCH_BIN}${PORCH_MANIFESTS}" ]]; then
    [[ -n "${PORCH_BIN}" && -n "${PORCH_MANIFESTS}" ]] ||
        die "PORCH_BIN and PORCH_MANIFESTS go together: the Porch server binary and the directory of its CRDs and FunctionConfigs (README: End-to-end tests)"
    [[ -f "${PORCH_BIN}" && -x "${PORCH_BIN}" ]] || die "PORCH_BIN=${PORCH_BIN} is not an executable file"
    [[ -d "${PORCH_MANIFESTS}" ]] || die "PORCH_MANIFESTS=${PORCH_MANIFESTS} is not a directory"
    PORCH_BIN="$(cd "$(dirname "${PORCH_BIN}")" && pwd -P)/$(basename "${PORCH_BIN}")"
    PORCH_MANIFESTS="$(cd "${PORCH_MANIFESTS}" && pwd -P)"
    if port_in_use 8080; then
        die "port 8080 is in use on this machine; the Porch server binds its FunctionConfig manager's metrics to :8080 (not configurable); free the port (another Porch, or a process serving metrics there?)"
    fi
fi

total_start=${SECONDS}
timings=()
# stage NAME COMMAND... runs COMMAND and records how long it took, failed or
# not; a failure ends the script (errexit) after the record.
stage() {
    local name="$1" start=${SECONDS} rc=0
    shift
    log "--- ${name}"
    "$@" || rc=$?
    timings+=("$(printf '%-34s %5ds%s' "${name}" $((SECONDS - start)) "$([ "${rc}" -eq 0 ] || echo "  FAILED (exit ${rc})")")")
    return "${rc}"
}

REPORT_TEXT=""
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    REPORT_TEXT="$(cat "${REPORT}" 2>/dev/null || true)"
    if [[ -n "${E2E_KEEP:-}" ]]; then
        log "E2E_KEEP is set; the cluster keeps running: eval \"\$(CLUSTER_DIR=${CLUSTER_DIR} hack/local-cluster.sh env)\"; remove it with CLUSTER_DIR=${CLUSTER_DIR} hack/local-cluster.sh down"
    elif [[ -d "${CLUSTER_DIR}" ]]; then
        stage "cluster down" hack/local-cluster.sh down || true
    fi
    echo
    if [[ -z "${REPORT_TEXT}" ]]; then
        echo "=== e2e: no report (${REPORT} is empty or was never written)"
    else
        echo "=== e2e: report (${REPORT})"
        printf '%s\n' "${REPORT_TEXT}"
    fi
    echo
    echo "=== e2e: stages"
    printf '%s\n' "${timings[@]}"
    printf '%-34s %5ds\n' "total" $((SECONDS - total_start))
    if [[ -z "${PORCH_BIN}" ]]; then
        echo "e2e: the Porch backend was skipped; set PORCH_BIN and PORCH_MANIFESTS to run every scenario against your Porch too (README: End-to-end tests)"
    fi
    if [[ "${rc}" -eq 0 ]]; then
        echo "e2e: passed"
    else
        echo "e2e: FAILED (exit ${rc})"
    fi
    exit "${rc}"
}

if [[ -d "${CLUSTER_DIR}" ]]; then
    log "removing the cluster left in ${CLUSTER_DIR} by an earlier run"
    hack/local-cluster.sh down
fi
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

stage "cluster up (audit log on)" env APISERVER_AUDIT_POLICY="${PWD}/hack/e2e/audit-policy.yaml" hack/local-cluster.sh up
eval "$(hack/local-cluster.sh env)"
[[ -n "${KUBE_AUDIT_LOG:-}" ]] || die "hack/local-cluster.sh env printed no KUBE_AUDIT_LOG: the cluster does not audit"

# build_ours returns at the first failure itself: stage runs it on the left
# of ||, where errexit does not apply. The binaries run on this machine, so
# they are built as `go vet` and `go run` compile (cgo as the toolchain
# defaults, -trimpath as .ci/run sets): what `make verify` compiled serves
# here, where a static build (CGO_ENABLED=0, the image's) cost 5 minutes on
# a cold CI machine.
build_ours() {
    local b
    mkdir -p bin || return 1
    for b in variant-controller porchsim-apiserver variantctl; do
        go build -trimpath -o "bin/${b}" "./cmd/${b}" || return 1
    done
}
stage "build variant-controller, porchsim, variantctl" build_ours

mkdir -p "$(dirname "${REPORT}")"
: >"${REPORT}"
test_args=(-tags e2e -count=1 -v -timeout "${TEST_TIMEOUT}")
if [[ -n "${E2E_RUN:-}" ]]; then
    test_args+=(-run "${E2E_RUN}")
fi
stage "go test ./test/e2e/" \
    env KUBECONFIG="${KUBECONFIG}" KUBECTL="$(command -v kubectl)" E2E_BIN="${PWD}/bin" \
    KUBE_AUDIT_LOG="${KUBE_AUDIT_LOG}" E2E_REPORT="${REPORT}" E2E_WORK_DIR="${CLUSTER_DIR}/e2e-work" \
    PORCH_BIN="${PORCH_BIN}" PORCH_MANIFESTS="${PORCH_MANIFESTS}" \
    go test "${test_args[@]}" ./test/e2e/
