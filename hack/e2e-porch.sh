#!/usr/bin/env bash
# make e2e-porch: the controller against the real Porch server, and in the
# same run against porchsim-apiserver, to hold the imitation against the real
# thing. Builds Porch (hack/porch.sh build; cached), starts a fresh local
# cluster (hack/local-cluster.sh) in its own state directory with the audit
# log on (hack/e2e-porch/audit-policy.yaml), starts Porch against it
# (hack/porch.sh up), builds our binaries, runs test/e2eporch (build tag
# e2e_porch), prints the tests' report and takes everything down again
# (E2E_KEEP=1 keeps it all running for a post-mortem). Prints how long each
# stage took.
#
# The tests get (test/e2eporch/main_test.go reads them):
#   KUBECONFIG        the cluster admin's kubeconfig
#   KUBECTL           kubectl
#   E2E_BIN           directory of variant-controller, porchsim-apiserver and
#                     variantctl
#   PORCH_BIN         directory of Porch's binaries (hack/porch.sh bin-dir)
#   PORCH_GIT_URL     Porch's test git server; a Repository's spec.git.repo
#                     is $PORCH_GIT_URL/<name> (created on first access)
#   PORCH_PORT        the Porch server's port on 127.0.0.1 (the APIService
#                     points there after `hack/porch.sh up`)
#   KUBE_AUDIT_LOG    the kube-apiserver's audit log (JSON lines)
#   E2E_PORCH_REPORT  where the tests write their figures; printed at the end,
#                     passed or failed
#   E2E_PORCH_WORK_DIR  where the processes the tests start write their logs
#                     (${CLUSTER_DIR}/e2e-work, next to the cluster's logs)
#
# Ports: the Porch server binds :8080 (its FunctionConfig manager's metrics;
# not configurable), so `hack/porch.sh up` refuses to start when :8080 is
# taken, and everything the tests start must stay off :8080 (and :8081, the
# port of Porch's repository controller): our controller's defaults are both.
#
# Environment (all optional):
#   E2E_PORCH_CLUSTER_DIR  the cluster's state directory (default
#                          /tmp/variant-controller-e2e-porch); a leftover one
#                          is taken down and removed first
#   E2E_PORCH_REPORT       the report file (default ${CLUSTER_DIR}/report.txt,
#                          which goes with the cluster unless E2E_KEEP is set)
#   E2E_PORCH_RUN          go test -run pattern (default: every test)
#   E2E_PORCH_TIMEOUT      go test -timeout (default 40m)
#   E2E_PORCH_STOP_TIMEOUT seconds the teardown waits after SIGTERM before
#                          SIGKILL (default 5; STOP_TIMEOUT of the scripts)
#   E2E_KEEP               non-empty: leave the cluster, Porch, the logs and
#                          the tests' work directory in place
#
# Teardown: Porch stops only after the last watch proxied to it ends, and
# kube-controller-manager's garbage collector watches packagerevisions
# through the aggregator (from its first discovery after `porch.sh up`, within
# 30s) until the cluster goes, which is after Porch. The kube-apiserver, too,
# sometimes took 13s or more to exit after the smoke tests (3s in other runs,
# and after plain kubectl use, audit log on or off). Waiting gracefully buys
# nothing for state that is removed right after, hence the short
# STOP_TIMEOUT.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export CLUSTER_DIR="${E2E_PORCH_CLUSTER_DIR:-/tmp/variant-controller-e2e-porch}"
REPORT="${E2E_PORCH_REPORT:-${CLUSTER_DIR}/report.txt}"
RUN="${E2E_PORCH_RUN:-}"
TEST_TIMEOUT="${E2E_PORCH_TIMEOUT:-40m}"
STOP_TIMEOUT="${E2E_PORCH_STOP_TIMEOUT:-5}"
AUDIT_POLICY="${PWD}/hack/e2e-porch/audit-policy.yaml"

log() {
    echo "e2e-porch: $*" >&2
}

die() {
    log "$*"
    exit 1
}

port_in_use() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

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

summary() {
    echo
    echo "=== e2e-porch: stages"
    printf '%s\n' "${timings[@]}"
    printf '%-34s %5ds\n' "total" $((SECONDS - total_start))
}

# print_report shows the tests' report (REPORT_TEXT: read before the
# teardown, which may remove the file with the cluster).
print_report() {
    echo
    if [[ -z "${REPORT_TEXT}" ]]; then
        echo "=== e2e-porch: no report (${REPORT} is empty or was never written)"
    else
        echo "=== e2e-porch: report (${REPORT})"
        printf '%s\n' "${REPORT_TEXT}"
    fi
}

teardown() {
    STOP_TIMEOUT="${STOP_TIMEOUT}" hack/porch.sh down || log "warning: hack/porch.sh down failed"
    STOP_TIMEOUT="${STOP_TIMEOUT}" hack/local-cluster.sh down || log "warning: hack/local-cluster.sh down failed"
}

REPORT_TEXT=""
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    rm -f "${RUN_FILE}"
    REPORT_TEXT="$(cat "${REPORT}" 2>/dev/null || true)"
    if [[ -n "${E2E_KEEP:-}" ]]; then
        log "E2E_KEEP is set; the cluster and Porch keep running. Use them with:"
        log "  eval \"\$(CLUSTER_DIR=${CLUSTER_DIR} hack/local-cluster.sh env)\"; eval \"\$(CLUSTER_DIR=${CLUSTER_DIR} hack/porch.sh env)\""
        log "and remove them with: CLUSTER_DIR=${CLUSTER_DIR} hack/porch.sh down; CLUSTER_DIR=${CLUSTER_DIR} hack/local-cluster.sh down"
    elif [[ -d "${CLUSTER_DIR}" ]]; then
        stage "teardown" teardown || true
    fi
    print_report
    summary
    if [[ "${rc}" -eq 0 ]]; then
        echo "e2e-porch: passed"
    else
        echo "e2e-porch: FAILED (exit ${rc})"
    fi
    exit "${rc}"
}

# One run per state directory: a second one would take the first one's
# cluster down as "left by an earlier run". A PID file, not flock: the lock's
# descriptor would be inherited by the daemons the run starts and outlive it.
RUN_FILE="${CLUSTER_DIR}.run"
other="$(cat "${RUN_FILE}" 2>/dev/null || true)"
if [[ -n "${other}" ]] && kill -0 "${other}" 2>/dev/null &&
    [[ "$(tr '\0' ' ' <"/proc/${other}/cmdline" 2>/dev/null)" == *e2e-porch.sh* ]]; then
    die "another run (pid ${other}) is using ${CLUSTER_DIR}; wait for it (there can be only one Porch per machine: :8080)"
fi

# Before anything slow: the Porch server cannot run with :8080 taken
# (hack/porch.sh up checks again, when it matters).
if port_in_use 8080; then
    die "port 8080 is in use on this machine; the Porch server binds its FunctionConfig manager's metrics to :8080 (not configurable); free the port (another Porch, or a variant-controller with its default --metrics-bind-address?)"
fi

echo "$$" >"${RUN_FILE}"
trap 'rm -f "${RUN_FILE}"' EXIT
if [[ -d "${CLUSTER_DIR}" ]]; then
    log "removing the cluster left in ${CLUSTER_DIR} by an earlier run"
    STOP_TIMEOUT="${STOP_TIMEOUT}" hack/porch.sh down
    STOP_TIMEOUT="${STOP_TIMEOUT}" hack/local-cluster.sh down
fi
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

stage "build Porch (hack/porch.sh build)" hack/porch.sh build
PORCH_BIN="$(hack/porch.sh bin-dir)"

stage "cluster up (audit log on)" env APISERVER_AUDIT_POLICY="${AUDIT_POLICY}" hack/local-cluster.sh up
eval "$(hack/local-cluster.sh env)"
[[ -n "${KUBE_AUDIT_LOG:-}" ]] || die "hack/local-cluster.sh env printed no KUBE_AUDIT_LOG: the cluster does not audit"

stage "Porch up (hack/porch.sh up)" hack/porch.sh up
eval "$(hack/porch.sh env)"
[[ -n "${PORCH_PORT:-}" ]] || die "hack/porch.sh env printed no PORCH_PORT"

# build_ours returns at the first failure itself: stage runs it on the left
# of ||, where errexit does not apply.
build_ours() {
    local b
    mkdir -p bin || return 1
    for b in variant-controller porchsim-apiserver variantctl; do
        CGO_ENABLED=0 go build -trimpath -o "bin/${b}" "./cmd/${b}" || return 1
    done
}
stage "build variant-controller, porchsim, variantctl" build_ours

mkdir -p "$(dirname "${REPORT}")"
: >"${REPORT}"
test_args=(-tags e2e_porch -count=1 -v -timeout "${TEST_TIMEOUT}")
if [[ -n "${RUN}" ]]; then
    test_args+=(-run "${RUN}")
fi
stage "go test ./test/e2eporch/" \
    env KUBECONFIG="${KUBECONFIG}" KUBECTL="$(command -v kubectl)" E2E_BIN="${PWD}/bin" \
    PORCH_BIN="${PORCH_BIN}" PORCH_GIT_URL="${PORCH_GIT_URL}" PORCH_PORT="${PORCH_PORT}" \
    KUBE_AUDIT_LOG="${KUBE_AUDIT_LOG}" PORCH_LOG_DIR="${PORCH_LOG_DIR}" E2E_PORCH_REPORT="${REPORT}" E2E_PORCH_WORK_DIR="${CLUSTER_DIR}/e2e-work" \
    go test "${test_args[@]}" ./test/e2eporch/
