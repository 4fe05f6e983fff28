#!/usr/bin/env bash
# The real Porch (nephio-project/porch), built from source and run as plain
# processes next to the local control plane of hack/local-cluster.sh: the
# Porch API server registered as the aggregated API porch.kpt.dev/v1alpha1,
# and Porch's test git server as the home of the git repositories.
#
#   hack/porch.sh build     build (or find) the cached binaries
#   hack/porch.sh bin-dir   print the directory of the cached binaries
#                           (building them first if needed)
#   hack/porch.sh up        start Porch against the running local cluster
#   hack/porch.sh down      stop what `up` started (not the cluster)
#   hack/porch.sh env       print `export PORCH_GIT_URL=... PORCH_BIN=...
#                           PORCH_LOG_DIR=... PORCH_PORT=...` (PORCH_PORT:
#                           the server's port on 127.0.0.1, which the
#                           APIService points at; empty when not up)
#
#   hack/local-cluster.sh up && hack/porch.sh up
#   eval "$(hack/local-cluster.sh env)"; eval "$(hack/porch.sh env)"
#   kubectl get packagerevisions -A
#   # a git Repository: spec.git.repo: $PORCH_GIT_URL/<any name> (created on
#   # first access, branch main)
#
# Binaries (in `bin-dir`): porch (the API server), porch-git-server (Porch's
# test git server, ./test/git), porch-controllers (Porch's own controllers,
# ./controllers, among them its PackageVariant and PackageVariantSet
# reconcilers; `up` does not start them) and porchctl.
#
# Sources: Porch is not fetchable through the Go module proxy, so it is built
# from a copy of its sources and of the kpt module it requires:
#   PORCH_SRC   a .tar.gz of nephio-project/porch or a directory (a checkout);
#               default ../shared/third_party/porch-74d82d56.tar.gz next to
#               the repository
#   KPT_SRC     a .tar.gz of kptdev/kpt or a directory, the version Porch's
#               go.mod requires; default
#               ../shared/third_party/kpt-v1.0.0-beta.62.1.tar.gz
# Both are copied or unpacked into a temporary directory side by side, Porch's
# go.mod gets `replace github.com/kptdev/kpt => ../kpt`, and everything else is
# downloaded through the Go module proxy. A cold build (empty Go module and
# build caches) takes 10 to 18 minutes on two cores (measured: 635s, next to a
# Kubernetes build); with a warm Go build cache, about 30s. The binaries are
# cached in
# ${XDG_CACHE_HOME:-$HOME/.cache}/variant-controller/porch-<key>/bin, where
# the key hashes both sources (an archive's sha256; for a directory the
# contents of its `git ls-files`, or of all its files outside a git checkout)
# and the Go version; they are rebuilt only when the key changes.
#
# `up` needs the cluster of hack/local-cluster.sh (same CLUSTER_DIR) to be up.
# It installs Porch's CRDs (Repository, FunctionConfig, and the internal
# PackageRev that stores package revision metadata), the namespace
# porch-fn-system with Porch's FunctionConfigs (which make set-namespace,
# apply-replacements and starlark run built into the server), starts the git
# server and the Porch server on free ports of 127.0.0.1, registers the server
# with the APIService v1alpha1.porch.kpt.dev (an ExternalName Service to
# localhost, as hack/e2e/porch-apiservice.yaml does for porchsim) and waits
# until `kubectl get packagerevisions -A` answers and the server has loaded
# its FunctionConfigs. No function runner runs: --function-runner points at an
# unused port, so only the built-in functions work (any other image fails the
# render). Porch's repository controller runs only on request (see
# PORCH_REPOSITORY_CONTROLLER); `down` stops everything `up` started and
# removes ${CLUSTER_DIR}/porch (git repositories and logs included).
#
# Fixed ports: the Porch server also binds :8080 (the metrics of its
# FunctionConfig manager; not configurable), so only one Porch per machine.
# The git server listens on all interfaces (it has no address flag). The
# server puts its finalizer on the FunctionConfigs; they stay with it after
# `down` (deleting the cluster deletes them all the same).
#
# Environment (all optional):
#   CLUSTER_DIR            the local cluster's state directory (default
#                          /tmp/variant-controller-cluster); Porch's state,
#                          PIDs and logs go to ${CLUSTER_DIR}/porch
#   PORCH_SRC, KPT_SRC     see above
#   PORCH_CACHE_DIR        where the binaries are cached (default above,
#                          without the key; the key is a subdirectory)
#   PORCH_PORT, PORCH_GIT_PORT, PORCH_FUNCTION_RUNNER_PORT
#                          fixed ports; when unset, the first free port from
#                          29443, 29446 and 29445 upwards is taken
#   PORCH_REPOSITORY_CONTROLLER
#                          1: `up` also starts Porch's repository controller
#                          (porch-controllers --reconcilers=repositories, with
#                          a CR cache of its own), the only thing that sets a
#                          Repository's status (Ready condition); without it
#                          Repositories never get a status, although Porch
#                          serves their packages all the same. It binds :8081
#                          and puts a finalizer on every Repository, which
#                          `down` removes. Default 0.
#   PORCH_WAIT_TIMEOUT     seconds `up` waits for readiness (default 180)
#   STOP_TIMEOUT           seconds `down` waits after SIGTERM before SIGKILL
#                          (default 15)
set -o errexit
set -o nounset
set -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
# The shared folder next to the repository (../shared from its root).
THIRD_PARTY="$(cd "${ROOT}/.." && pwd -P)/shared/third_party"
DEFAULT_PORCH_SRC="${THIRD_PARTY}/porch-74d82d56.tar.gz"
DEFAULT_KPT_SRC="${THIRD_PARTY}/kpt-v1.0.0-beta.62.1.tar.gz"

CLUSTER_DIR="${CLUSTER_DIR:-/tmp/variant-controller-cluster}"
STATE_DIR="${CLUSTER_DIR}/porch"
PORCH_CACHE_DIR="${PORCH_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/variant-controller}"
PORCH_WAIT_TIMEOUT="${PORCH_WAIT_TIMEOUT:-180}"
PORCH_REPOSITORY_CONTROLLER="${PORCH_REPOSITORY_CONTROLLER:-0}"
case "${PORCH_REPOSITORY_CONTROLLER}" in
0 | 1) ;;
*)
    echo "porch: PORCH_REPOSITORY_CONTROLLER must be 0 or 1, not '${PORCH_REPOSITORY_CONTROLLER}'" >&2
    exit 2
    ;;
esac
STOP_TIMEOUT="${STOP_TIMEOUT:-15}"

# How to run this script again, for the hints it prints.
SELF="hack/porch.sh"
CLUSTER_SELF="hack/local-cluster.sh"
if [ "${CLUSTER_DIR}" != /tmp/variant-controller-cluster ]; then
    SELF="CLUSTER_DIR=${CLUSTER_DIR} ${SELF}"
    CLUSTER_SELF="CLUSTER_DIR=${CLUSTER_DIR} ${CLUSTER_SELF}"
fi

# Package -> installed name. The test git server's package is ./test/git,
# whose default binary name `git` would shadow git on a PATH.
BUILD_PKGS=(./cmd/porch ./test/git ./controllers ./cmd/porchctl)
BINARIES=(porch porch-git-server porch-controllers porchctl)
# Changing how the binaries are built changes this, and so the cache key.
BUILD_RECIPE="v1 CGO_ENABLED=0 -trimpath -ldflags=-s -w ${BUILD_PKGS[*]} -> ${BINARIES[*]}"
# What `up` installs, copied from Porch's sources next to the binaries
# (porch-<key>/manifests): the CRDs the server needs, then its FunctionConfigs.
MANIFESTS=(
    api/porchconfig/v1alpha1/config.porch.kpt.dev_repositories.yaml
    api/porchconfig/v1alpha1/config.porch.kpt.dev_functionconfigs.yaml
    internal/api/porchinternal/v1alpha1/config.porch.kpt.dev_packagerevs.yaml
    deployments/porch/23-function-configurations.yaml
)
# Written last into the bin directory: an interrupted build is redone.
BUILT_MARKER=".built"
# Stopped in this order by `down`; repo-controller only runs with
# PORCH_REPOSITORY_CONTROLLER=1.
COMPONENTS=(repo-controller porch-server git-server)
# Only a directory holding this file is ever removed by `down`.
STATE_MARKER=".variant-controller-porch"
# Put on every Repository by Porch's repository controller.
REPOSITORY_FINALIZER="config.porch.kpt.dev/repository"

log() {
    echo "porch: $*" >&2
}

die() {
    log "$*"
    exit 1
}

# ---------------------------------------------------------------- building

# resolve_source VAR DEFAULT checks the source named by the variable VAR
# (default DEFAULT) and sets VAR to its absolute path.
resolve_source() {
    local name="$1" default="$2" path
    path="${!name:-}"
    if [ -z "${path}" ]; then
        path="${default}"
        [ -e "${path}" ] ||
            die "${path} does not exist (the default for ${name}); set ${name}=/path/to/a/checkout/or/archive.tar.gz (the shared folder is expected next to the repository: $(dirname "${ROOT}")/shared)"
    else
        [ -e "${path}" ] || die "${name}=${path} does not exist; set ${name} to a directory (checkout) or a .tar.gz archive"
    fi
    if [ -d "${path}" ]; then
        path="$(cd "${path}" && pwd -P)"
    elif [ -f "${path}" ]; then
        case "${path}" in
        *.tar.gz | *.tgz) ;;
        *) die "${name}=${path} is neither a directory nor a .tar.gz archive" ;;
        esac
        path="$(cd "$(dirname "${path}")" && pwd -P)/$(basename "${path}")"
    else
        die "${name}=${path} is neither a directory nor a .tar.gz archive"
    fi
    printf -v "${name}" '%s' "${path}"
}

# is_git_checkout DIR succeeds when DIR is inside a git work tree.
is_git_checkout() {
    command -v git >/dev/null &&
        [ "$(git -C "$1" rev-parse --is-inside-work-tree 2>/dev/null)" = "true" ]
}

# list_files DIR prints, NUL-separated and sorted, the files of DIR that make
# up the source: in a git checkout the tracked and the untracked but not
# ignored files (deleted ones left out), otherwise every file outside .git.
list_files() {
    local dir="$1"
    if is_git_checkout "${dir}"; then
        (cd "${dir}" && git ls-files -z --cached --others --exclude-standard |
            while IFS= read -r -d '' f; do
                if [ -f "${f}" ] || [ -L "${f}" ]; then printf '%s\0' "${f}"; fi
            done | LC_ALL=C sort -z -u)
    else
        (cd "${dir}" && find . -path ./.git -prune -o \( -type f -o -type l \) -print0 |
            sed -z 's|^\./||' | LC_ALL=C sort -z)
    fi
}

# source_key PATH prints the sha256 identifying a source archive or directory:
# for a directory, over the paths and contents of its files (symbolic links:
# their targets).
source_key() {
    local path="$1" tmp f
    if [ -f "${path}" ]; then
        sha256sum <"${path}" | cut -d' ' -f1
        return
    fi
    tmp="$(mktemp -d)"
    (
        cd "${path}" || exit 1
        # errexit is off in here (the subshell is the left side of ||).
        list_files . >"${tmp}/all" || exit 1
        while IFS= read -r -d '' f; do
            if [ -L "${f}" ]; then
                printf 'symlink %s -> %s\n' "${f}" "$(readlink "${f}")"
            else
                printf '%s\0' "${f}" >>"${tmp}/files"
            fi
        done <"${tmp}/all" >"${tmp}/links" || exit 1
        # "<hash>  <path>" per file.
        touch "${tmp}/files" || exit 1
        xargs -0 -r sha256sum -- <"${tmp}/files" >"${tmp}/sums" || exit 1
        cat "${tmp}/sums" "${tmp}/links" | sha256sum | cut -d' ' -f1
    ) || {
        rm -rf "${tmp}"
        die "cannot compute the checksum of ${path}"
    }
    rm -rf "${tmp}"
}

# compute_bin_dir sets KEY and BIN_DIR from the sources and the Go version.
compute_bin_dir() {
    [ -n "${BIN_DIR:-}" ] && return 0
    resolve_source PORCH_SRC "${DEFAULT_PORCH_SRC}"
    resolve_source KPT_SRC "${DEFAULT_KPT_SRC}"
    command -v go >/dev/null || die "go is needed to build Porch; install Go or put it on PATH"
    GO_VERSION="$(GOTOOLCHAIN=local go env GOVERSION)"
    local porch_key kpt_key
    porch_key="$(source_key "${PORCH_SRC}")" || exit 1
    kpt_key="$(source_key "${KPT_SRC}")" || exit 1
    KEY="$(printf 'porch %s\nkpt %s\ngo %s\nrecipe %s\n' "${porch_key}" "${kpt_key}" "${GO_VERSION}" "${BUILD_RECIPE}" |
        sha256sum | cut -c1-16)"
    BIN_DIR="${PORCH_CACHE_DIR}/porch-${KEY}/bin"
}

binaries_ok() {
    local b
    [ -f "${BIN_DIR}/${BUILT_MARKER}" ] || return 1
    for b in "${BINARIES[@]}"; do
        [ -x "${BIN_DIR}/${b}" ] || return 1
    done
    for b in "${MANIFESTS[@]}"; do
        [ -f "${BIN_DIR}/../manifests/$(basename "${b}")" ] || return 1
    done
}

# stage_source PATH DEST puts the source PATH (archive or directory) at DEST.
stage_source() {
    local src="$1" dest="$2" unpack top
    if [ -f "${src}" ]; then
        unpack="${dest}.unpack"
        mkdir -p "${unpack}"
        tar -xzf "${src}" -C "${unpack}" || die "cannot unpack ${src}"
        # One top directory (porch/, kpt/), or the files directly.
        top="$(find "${unpack}" -mindepth 1 -maxdepth 1)"
        if [ "$(printf '%s\n' "${top}" | wc -l)" -eq 1 ] && [ -d "${top}" ]; then
            mv "${top}" "${dest}"
            rmdir "${unpack}"
        else
            mv "${unpack}" "${dest}"
        fi
    else
        mkdir -p "${dest}"
        # The same files the key was computed over; a checkout itself is
        # never modified.
        (cd "${src}" && list_files . | tar --null -T - -cf -) | tar -xf - -C "${dest}" ||
            die "cannot copy ${src}"
    fi
}

# module_of DIR prints the module path in DIR/go.mod.
module_of() {
    awk '$1 == "module" { print $2; exit }' "$1/go.mod" 2>/dev/null
}

ensure_binaries() {
    compute_bin_dir
    if binaries_ok; then
        return 0
    fi
    log "building Porch (${BINARIES[*]}) into ${BIN_DIR}"
    log "  from PORCH_SRC=${PORCH_SRC}"
    log "   and KPT_SRC=${KPT_SRC}, with ${GO_VERSION}"
    log "  with an empty Go build cache this takes 10 to 18 minutes on two cores (modules are downloaded through the Go module proxy)"

    mkdir -p "${PORCH_CACHE_DIR}"
    local tmp start module
    tmp="$(mktemp -d "${PORCH_CACHE_DIR}/porch-build.XXXXXX")"
    # shellcheck disable=SC2064 # tmp is fixed now; the trap must not see a later value.
    trap "rm -rf $(printf '%q' "${tmp}")" EXIT
    start="$(date +%s)"

    stage_source "${PORCH_SRC}" "${tmp}/porch"
    stage_source "${KPT_SRC}" "${tmp}/kpt"
    module="$(module_of "${tmp}/porch")"
    [ "${module}" = "github.com/nephio-project/porch" ] ||
        die "PORCH_SRC=${PORCH_SRC} is not nephio-project/porch (its go.mod declares module '${module}')"
    module="$(module_of "${tmp}/kpt")"
    [ "${module}" = "github.com/kptdev/kpt" ] ||
        die "KPT_SRC=${KPT_SRC} is not kptdev/kpt (its go.mod declares module '${module}')"
    log "kpt: $(awk '$1 == "github.com/kptdev/kpt" { print "Porch requires " $2 }' "${tmp}/porch/go.mod")"
    # The module proxy does not serve kpt (of Porch: not at all): build it
    # from the source next to Porch. `go mod edit` replaces an existing
    # replacement too.
    (cd "${tmp}/porch" && GOWORK=off GOFLAGS=-mod=mod go mod edit -replace github.com/kptdev/kpt=../kpt) ||
        die "cannot add the kpt replacement to Porch's go.mod"

    # GONOSUMDB: the kptdev krm-functions-catalog modules are served by the
    # proxy but not in the checksum database. -mod=mod: go.sum gains the
    # entries the replacement needs. CGO_ENABLED=0 as in Porch's Dockerfile.
    # One `go build` for all packages so shared packages compile once, in
    # parallel.
    log "running go build ${BUILD_PKGS[*]} in ${tmp}/porch"
    if ! (cd "${tmp}/porch" &&
        GONOSUMDB="${GONOSUMDB:+${GONOSUMDB},}github.com/kptdev,github.com/nephio-project" \
            GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 GOWORK=off \
            go build -trimpath -ldflags "-s -w" -o "${tmp}/out/" "${BUILD_PKGS[@]}"); then
        die "building Porch failed (see the go output above)"
    fi
    mkdir -p "${BIN_DIR}"
    rm -f "${BIN_DIR}/${BUILT_MARKER}"
    # go build names each binary after the last element of its package path.
    mv -f "${tmp}/out/porch" "${BIN_DIR}/porch"
    mv -f "${tmp}/out/git" "${BIN_DIR}/porch-git-server"
    mv -f "${tmp}/out/controllers" "${BIN_DIR}/porch-controllers"
    mv -f "${tmp}/out/porchctl" "${BIN_DIR}/porchctl"
    # The resources `up` installs, from the same source.
    rm -rf "${BIN_DIR}/../manifests"
    mkdir -p "${BIN_DIR}/../manifests"
    local m
    for m in "${MANIFESTS[@]}"; do
        cp "${tmp}/porch/${m}" "${BIN_DIR}/../manifests/" || die "Porch's sources lack ${m}, which up installs"
    done
    {
        echo "PORCH_SRC=${PORCH_SRC}"
        echo "KPT_SRC=${KPT_SRC}"
        echo "GO_VERSION=${GO_VERSION}"
        echo "BUILD_SECONDS=$(($(date +%s) - start))"
    } >"${BIN_DIR}/../build-info"
    rm -rf "${tmp}"
    trap - EXIT
    # Written last: an interrupted build is redone rather than trusted.
    echo "${KEY}" >"${BIN_DIR}/${BUILT_MARKER}"
    log "built ${BINARIES[*]} in $(($(date +%s) - start))s"
}

# ---------------------------------------------------------------- running

port_in_use() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# pick_port NAME DEFAULT sets the variable NAME: its value from the
# environment, which must be free, or the first free port from DEFAULT up.
# Ports already taken by this run are skipped too: nothing listens on them yet.
TAKEN_PORTS=" "
pick_port() {
    local name="$1" port="$2" last
    if [ -n "${!name:-}" ]; then
        port="${!name}"
        ! port_in_use "${port}" || die "${name}=${port} is in use on 127.0.0.1; choose another port"
    else
        last=$((port + 200))
        while port_in_use "${port}" || [[ "${TAKEN_PORTS}" == *" ${port} "* ]]; do
            port=$((port + 1))
            [ "${port}" -le "${last}" ] || die "no free port in $2-${last} for ${name}; set ${name}"
        done
    fi
    TAKEN_PORTS+="${port} "
    printf -v "${name}" '%s' "${port}"
}

kubectl_admin() {
    kubectl --kubeconfig "${KUBECONFIG}" --request-timeout=10s "$@"
}

# load_cluster puts the local cluster's kubectl and kubeconfig in the
# environment (as `hack/local-cluster.sh env` prints them) and succeeds when
# the cluster answers.
load_cluster() {
    [ -f "${CLUSTER_DIR}/kubeconfig" ] || return 1
    eval "$(CLUSTER_DIR="${CLUSTER_DIR}" "${ROOT}/hack/local-cluster.sh" env 2>/dev/null)" || return 1
    command -v kubectl >/dev/null || return 1
    [ "$(kubectl_admin get --raw /readyz 2>/dev/null)" = "ok" ]
}

use_cluster() {
    [ -f "${CLUSTER_DIR}/kubeconfig" ] ||
        die "no local cluster in ${CLUSTER_DIR} (no kubeconfig); start it with: ${CLUSTER_SELF} up"
    load_cluster ||
        die "the local cluster in ${CLUSTER_DIR} does not answer (kube-apiserver /readyz with kubectl from ${CLUSTER_SELF} env); start it with: ${CLUSTER_SELF} up"
}

# quiet COMMAND... runs COMMAND without its chatter, which is shown only when
# it fails.
quiet() {
    local out
    if ! out="$("$@" 2>&1)"; then
        log "failed: $*"
        printf '%s\n' "${out}" >&2
        exit 1
    fi
}

# start NAME BINARY ARGS... runs BINARY detached (its own session, so a
# Ctrl-C or the end of the calling shell does not reach it), logging to
# logs/NAME.log.
start() {
    local name="$1"
    shift
    setsid "$@" </dev/null >"${STATE_DIR}/logs/${name}.log" 2>&1 &
    local pid=$! i
    echo "${pid}" >"${STATE_DIR}/${name}.pid"
    # Until the forked shell has exec'd the command, /proc shows this
    # script's command line, and pid_of would take the component for gone
    # (seen under load). Wait for the exec (or the exit), at most 10 s.
    for ((i = 0; i < 100; i++)); do
        kill -0 "${pid}" 2>/dev/null || break
        [[ "$(tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null)" == *"$1"* ]] && break
        sleep 0.1
    done
}

# binary_of NAME prints the binary component NAME runs.
binary_of() {
    case "$1" in
    porch-server) echo porch ;;
    git-server) echo porch-git-server ;;
    repo-controller) echo porch-controllers ;;
    esac
}

# pid_of NAME prints the PID of component NAME when it is running, and fails
# otherwise. The command line is checked so a reused PID is never taken for
# the component.
pid_of() {
    local pid cmdline
    pid="$(cat "${STATE_DIR}/$1.pid" 2>/dev/null)" || return 1
    [ -n "${pid}" ] && kill -0 "${pid}" 2>/dev/null || return 1
    # Read whole, not piped into `grep -q`: under pipefail an early exit of
    # grep can fail the pipeline with SIGPIPE.
    cmdline="$(tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null)" || return 1
    [[ "${cmdline}" == *"/$(binary_of "$1") "* ]] || return 1
    echo "${pid}"
}

# fail_with NAME MESSAGE prints the end of NAME's log and exits (the EXIT trap
# stops what was started).
fail_with() {
    local name="$1"
    shift
    log "$*"
    if [ -f "${STATE_DIR}/logs/${name}.log" ]; then
        log "last lines of ${STATE_DIR}/logs/${name}.log:"
        tail -n 30 "${STATE_DIR}/logs/${name}.log" | sed 's/^/    /' >&2
    fi
    die "Porch did not come up; logs are in ${STATE_DIR}/logs (${SELF} down removes them)"
}

# wait_for NAME DESCRIPTION COMMAND... retries COMMAND until it succeeds,
# NAME dies or the deadline passes. NAME was started by this run, so its PID
# is trusted as it is (pid_of's command line check could fail in the moment
# before the forked shell has exec'd the binary).
wait_for() {
    local name="$1" what="$2" pid
    shift 2
    pid="$(cat "${STATE_DIR}/${name}.pid")"
    until "$@" >/dev/null 2>&1; do
        kill -0 "${pid}" 2>/dev/null || fail_with "${name}" "${name} exited while waiting for ${what}"
        [ "$(date +%s)" -lt "${DEADLINE}" ] || fail_with "${name}" "timed out after ${PORCH_WAIT_TIMEOUT}s waiting for ${what}"
        sleep 0.5
    done
}

# all_running succeeds when every component is running, and loads porch.env.
all_running() {
    local name
    [ -f "${STATE_DIR}/porch.env" ] || return 1
    # shellcheck source=/dev/null
    source "${STATE_DIR}/porch.env"
    for name in "${COMPONENTS[@]}"; do
        if [ "${name}" = repo-controller ] && [ "${PORCH_REPOSITORY_CONTROLLER_STARTED:-0}" != 1 ]; then
            continue
        fi
        pid_of "${name}" >/dev/null || return 1
    done
}

stop_components() {
    local name pid start deadline
    for name in "${COMPONENTS[@]}"; do
        pid="$(pid_of "${name}")" || {
            rm -f "${STATE_DIR}/${name}.pid"
            continue
        }
        kill -TERM "${pid}" 2>/dev/null || true
        start="$(date +%s)"
        deadline=$((start + STOP_TIMEOUT))
        while kill -0 "${pid}" 2>/dev/null && [ "$(date +%s)" -lt "${deadline}" ]; do
            sleep 0.2
        done
        if kill -0 "${pid}" 2>/dev/null; then
            log "${name} (pid ${pid}) still running ${STOP_TIMEOUT}s after SIGTERM; sending SIGKILL"
            kill -KILL "${pid}" 2>/dev/null || true
        else
            log "stopped ${name} (pid ${pid}) in $(($(date +%s) - start))s"
        fi
        rm -f "${STATE_DIR}/${name}.pid"
    done
}

# remove_state_dir removes STATE_DIR, but only one this script made.
remove_state_dir() {
    [ -e "${STATE_DIR}" ] || return 0
    if [ ! -f "${STATE_DIR}/${STATE_MARKER}" ]; then
        die "${STATE_DIR} exists but was not made by this script (no ${STATE_MARKER}); remove it yourself or set CLUSTER_DIR"
    fi
    rm -rf "${STATE_DIR}"
}

# The APIService and its Service carry this label, so `down` removes only
# what `up` made.
MANAGED_BY_KEY="app.kubernetes.io/managed-by"
MANAGED_BY_VALUE="variant-controller-hack-porch"

write_apiservice() {
    cat >"${STATE_DIR}/apiservice.yaml" <<EOF
# Written by hack/porch.sh: the Porch server on https://127.0.0.1:${PORCH_PORT}
# as porch.kpt.dev/v1alpha1. See hack/e2e/porch-apiservice.yaml for why the
# Service is an ExternalName Service for localhost.
apiVersion: v1
kind: Namespace
metadata:
  name: porch-system
---
apiVersion: v1
kind: Service
metadata:
  name: api
  namespace: porch-system
  labels:
    ${MANAGED_BY_KEY}: ${MANAGED_BY_VALUE}
spec:
  type: ExternalName
  externalName: localhost
  ports:
  - name: api
    port: ${PORCH_PORT}
    protocol: TCP
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1alpha1.porch.kpt.dev
  labels:
    ${MANAGED_BY_KEY}: ${MANAGED_BY_VALUE}
spec:
  group: porch.kpt.dev
  version: v1alpha1
  service:
    name: api
    namespace: porch-system
    port: ${PORCH_PORT}
  # The server's certificate is self-signed (--cert-dir).
  insecureSkipTLSVerify: true
  # Porch's own values (deployments/porch/4-apiservice.yaml).
  groupPriorityMinimum: 1000
  versionPriority: 15
EOF
}

apiservice_available() {
    [ "$(kubectl_admin get apiservice v1alpha1.porch.kpt.dev \
        -o jsonpath='{.status.conditions[?(@.type=="Available")].status}' 2>/dev/null)" = "True" ]
}

porch_answers() {
    kubectl_admin get packagerevisions -A >/dev/null 2>&1
}

# install_prerequisites applies Porch's CRDs, then the namespace
# porch-fn-system and the FunctionConfigs, all from Porch's sources.
install_prerequisites() {
    local manifests="${BIN_DIR}/../manifests" m crds=()
    log "installing Porch's CRDs (Repository, FunctionConfig, PackageRev) and its FunctionConfigs in namespace porch-fn-system"
    for m in "${MANIFESTS[@]:0:3}"; do
        crds+=(-f "${manifests}/$(basename "${m}")")
    done
    quiet kubectl_admin apply --server-side --force-conflicts "${crds[@]}"
    quiet kubectl_admin wait --for=condition=Established --timeout=60s \
        crd/repositories.config.porch.kpt.dev crd/functionconfigs.config.porch.kpt.dev crd/packagerevs.config.porch.kpt.dev
    kubectl_admin get namespace porch-fn-system >/dev/null 2>&1 ||
        quiet kubectl_admin create namespace porch-fn-system
    quiet kubectl_admin apply -f "${manifests}/$(basename "${MANIFESTS[3]}")"
}

# functionconfigs_loaded succeeds when the server's log shows it has
# reconciled every FunctionConfig in porch-fn-system (its built-in functions
# are known only from then on).
functionconfigs_loaded() {
    local names name logged
    names="$(kubectl_admin -n porch-fn-system get functionconfigs -o name 2>/dev/null)" || return 1
    logged="$(cat "${STATE_DIR}/logs/porch-server.log")"
    for name in ${names}; do
        [[ "${logged}" == *"FunctionConfig \"porch-fn-system/${name##*/}\" changed"* ]] || return 1
    done
}

cmd_up() {
    use_cluster
    if [ -f "${STATE_DIR}/${STATE_MARKER}" ]; then
        if all_running; then
            # Running but perhaps busy: wait rather than replace a server
            # someone is using.
            DEADLINE=$(($(date +%s) + PORCH_WAIT_TIMEOUT))
            until porch_answers; do
                [ "$(date +%s)" -lt "${DEADLINE}" ] ||
                    die "Porch in ${STATE_DIR} is running but does not answer after ${PORCH_WAIT_TIMEOUT}s; see ${STATE_DIR}/logs, or run ${SELF} down first"
                sleep 0.5
            done
            log "already up: Porch on https://127.0.0.1:${PORCH_PORT}, git server on ${PORCH_GIT_URL} (state in ${STATE_DIR})"
            log "use it with: eval \"\$(${SELF} env)\""
            return 0
        fi
        log "${STATE_DIR} holds a Porch that is not running (a reboot, a crash or an interrupted up); replacing it"
        stop_components
    fi
    remove_state_dir

    ensure_binaries

    # The server also starts a controller-runtime manager (its FunctionConfig
    # reconciler) whose metrics server binds :8080, with no flag to move it.
    # When that port is taken the manager stops: the server still answers,
    # but it never loads its FunctionConfigs, so no function runs built in.
    ! port_in_use 8080 ||
        die "port 8080 is in use on this machine; the Porch server binds its FunctionConfig manager's metrics to :8080 (not configurable) and without it runs no built-in function; free the port (another Porch?)"
    if [ "${PORCH_REPOSITORY_CONTROLLER}" = 1 ]; then
        # Its health probe listens on :8081, hard-coded.
        ! port_in_use 8081 ||
            die "port 8081 is in use on this machine; Porch's repository controller binds its health probe to :8081 (not configurable); free the port or leave PORCH_REPOSITORY_CONTROLLER unset"
    fi
    pick_port PORCH_PORT 29443
    pick_port PORCH_GIT_PORT 29446
    # Nothing listens there: Porch runs only its built-in functions.
    pick_port PORCH_FUNCTION_RUNNER_PORT 29445
    PORCH_GIT_URL="http://127.0.0.1:${PORCH_GIT_PORT}"

    mkdir -p "${STATE_DIR}/logs" "${STATE_DIR}/git" "${STATE_DIR}/certs" "${STATE_DIR}/cache"
    touch "${STATE_DIR}/${STATE_MARKER}"
    # A failed or interrupted `up` leaves nothing running; the state directory
    # stays for its logs and the next `up` replaces it.
    trap 'stop_components' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    cat >"${STATE_DIR}/porch.env" <<EOF
PORCH_PORT=${PORCH_PORT}
PORCH_GIT_PORT=${PORCH_GIT_PORT}
PORCH_FUNCTION_RUNNER_PORT=${PORCH_FUNCTION_RUNNER_PORT}
PORCH_GIT_URL=${PORCH_GIT_URL}
PORCH_BIN=${BIN_DIR}
PORCH_REPOSITORY_CONTROLLER_STARTED=${PORCH_REPOSITORY_CONTROLLER}
EOF

    install_prerequisites
    DEADLINE=$(($(date +%s) + PORCH_WAIT_TIMEOUT))

    # The git server has no address flag and listens on all interfaces; it
    # creates a repository (branch main) on the first access to /<name>.
    log "starting Porch's test git server on ${PORCH_GIT_URL} (repositories in ${STATE_DIR}/git)"
    start git-server "${BIN_DIR}/porch-git-server" --port "${PORCH_GIT_PORT}" "${STATE_DIR}/git"
    wait_for git-server "the git server on port ${PORCH_GIT_PORT}" port_in_use "${PORCH_GIT_PORT}"

    # Out of cluster: no KUBERNETES_SERVICE_* (Porch would take itself for
    # in-cluster) and no CERT_STORAGE_DIR (Porch would register a validating
    # webhook for Repositories that the apiserver cannot reach). The admin
    # kubeconfig (system:masters) serves as Porch's client and for delegated
    # authentication and authorization: nothing else needs RBAC.
    log "starting the Porch server on https://127.0.0.1:${PORCH_PORT} (function runner 127.0.0.1:${PORCH_FUNCTION_RUNNER_PORT} is not started: built-in functions only)"
    # OTEL_*_EXPORTER=none (unless set): Porch sets up OpenTelemetry with
    # autoexport, which otherwise pushes OTLP to localhost:4318 and logs a
    # connection error every few seconds.
    start porch-server env -u KUBERNETES_SERVICE_HOST -u KUBERNETES_SERVICE_PORT -u CERT_STORAGE_DIR \
        OTEL_TRACES_EXPORTER="${OTEL_TRACES_EXPORTER:-none}" \
        OTEL_METRICS_EXPORTER="${OTEL_METRICS_EXPORTER:-none}" \
        OTEL_LOGS_EXPORTER="${OTEL_LOGS_EXPORTER:-none}" \
        "${BIN_DIR}/porch" \
        --secure-port "${PORCH_PORT}" \
        --bind-address 127.0.0.1 \
        --kubeconfig "${KUBECONFIG}" \
        --authentication-kubeconfig "${KUBECONFIG}" \
        --authorization-kubeconfig "${KUBECONFIG}" \
        --cert-dir "${STATE_DIR}/certs" \
        --cache-directory "${STATE_DIR}/cache" \
        --function-runner "127.0.0.1:${PORCH_FUNCTION_RUNNER_PORT}"
    wait_for porch-server "the Porch server on port ${PORCH_PORT}" port_in_use "${PORCH_PORT}"

    log "registering it as the APIService v1alpha1.porch.kpt.dev"
    write_apiservice
    quiet kubectl_admin apply -f "${STATE_DIR}/apiservice.yaml"
    wait_for porch-server "the APIService v1alpha1.porch.kpt.dev to be Available" apiservice_available
    wait_for porch-server "kubectl get packagerevisions -A" porch_answers
    # Within seconds normally; a different log format (another Porch version)
    # only costs this wait and a warning.
    local deadline="${DEADLINE}"
    DEADLINE=$(($(date +%s) + 30))
    until functionconfigs_loaded; do
        pid_of porch-server >/dev/null || fail_with porch-server "porch-server exited while loading its FunctionConfigs"
        if [ "$(date +%s)" -ge "${DEADLINE}" ]; then
            log "warning: could not confirm from ${STATE_DIR}/logs/porch-server.log that the server loaded its FunctionConfigs; built-in functions may not be available yet"
            break
        fi
        sleep 0.5
    done
    DEADLINE="${deadline}"

    if [ "${PORCH_REPOSITORY_CONTROLLER}" = 1 ]; then
        # Porch's own controllers binary with only its repository reconciler:
        # it syncs each Repository with a cache of its own (CR, like the
        # server's) and sets its status (the Ready condition). It also puts
        # the finalizer config.porch.kpt.dev/repository on every Repository,
        # which `down` takes off again.
        log "starting Porch's repository controller (porch-controllers --reconcilers=repositories, CR cache)"
        start repo-controller env KUBECONFIG="${KUBECONFIG}" \
            OTEL_TRACES_EXPORTER="${OTEL_TRACES_EXPORTER:-none}" \
            OTEL_METRICS_EXPORTER="${OTEL_METRICS_EXPORTER:-none}" \
            OTEL_LOGS_EXPORTER="${OTEL_LOGS_EXPORTER:-none}" \
            "${BIN_DIR}/porch-controllers" \
            --reconcilers=repositories \
            --repositories.cache-type=CR \
            --repositories.cache-directory="${STATE_DIR}/repo-controller-cache"
        wait_for repo-controller "the repository controller's health probe on :8081" port_in_use 8081
    fi

    trap - EXIT INT TERM
    log "up: Porch on https://127.0.0.1:${PORCH_PORT}, git server on ${PORCH_GIT_URL}, logs in ${STATE_DIR}/logs"
    log "use it with: eval \"\$(${CLUSTER_SELF} env)\"; eval \"\$(${SELF} env)\""
}

# remove_repository_finalizers takes the repository controller's finalizer
# off every Repository: with the controller stopped, nothing else would, and
# deleting a Repository (or its namespace) would hang.
remove_repository_finalizers() {
    local line ns name finalizers f kept
    while read -r line; do
        [ -n "${line}" ] || continue
        ns="${line%% *}"
        line="${line#* }"
        name="${line%% *}"
        finalizers="${line#* }"
        [[ " ${finalizers} " == *" ${REPOSITORY_FINALIZER} "* ]] || continue
        kept=""
        for f in ${finalizers}; do
            [ "${f}" = "${REPOSITORY_FINALIZER}" ] || kept+="${kept:+,}\"${f}\""
        done
        kubectl_admin -n "${ns}" patch repository "${name}" --type=merge \
            -p "{\"metadata\":{\"finalizers\":[${kept}]}}" >/dev/null 2>&1 ||
            log "warning: could not remove the finalizer ${REPOSITORY_FINALIZER} from Repository ${ns}/${name}"
    done < <(kubectl_admin get repositories -A \
        -o jsonpath='{range .items[*]}{.metadata.namespace}{" "}{.metadata.name}{" "}{.metadata.finalizers[*]}{"\n"}{end}' 2>/dev/null)
}

cmd_down() {
    if [ ! -e "${STATE_DIR}" ]; then
        log "nothing to do: ${STATE_DIR} does not exist"
        return 0
    fi
    [ -f "${STATE_DIR}/${STATE_MARKER}" ] ||
        die "${STATE_DIR} was not made by this script (no ${STATE_MARKER}); not touching it"
    local repo_controller=0
    if [ -f "${STATE_DIR}/porch.env" ]; then
        # shellcheck source=/dev/null
        repo_controller="$(source "${STATE_DIR}/porch.env" && echo "${PORCH_REPOSITORY_CONTROLLER_STARTED:-0}")"
    fi
    # The APIService first, so the cluster does not go on advertising an API
    # nobody serves (kubectl would warn about discovery on every call).
    if load_cluster; then
        kubectl_admin delete apiservice -l "${MANAGED_BY_KEY}=${MANAGED_BY_VALUE}" --ignore-not-found >/dev/null 2>&1 ||
            log "warning: could not delete the APIService v1alpha1.porch.kpt.dev"
        kubectl_admin -n porch-system delete service -l "${MANAGED_BY_KEY}=${MANAGED_BY_VALUE}" --ignore-not-found >/dev/null 2>&1 ||
            log "warning: could not delete the Service porch-system/api"
    fi
    stop_components
    if [ "${repo_controller}" = 1 ] && load_cluster; then
        remove_repository_finalizers
    fi
    remove_state_dir
    log "down: removed ${STATE_DIR} (Porch's CRDs, FunctionConfigs and any Repositories stay in the cluster)"
}

cmd_env() {
    local bin
    if [ -f "${STATE_DIR}/porch.env" ]; then
        # shellcheck source=/dev/null
        source "${STATE_DIR}/porch.env"
        bin="${PORCH_BIN}"
    else
        log "warning: Porch is not up in ${STATE_DIR}; run ${SELF} up"
        PORCH_GIT_URL=""
        PORCH_PORT=""
        compute_bin_dir
        bin="${BIN_DIR}"
    fi
    printf 'export PORCH_GIT_URL=%q\n' "${PORCH_GIT_URL}"
    printf 'export PORCH_BIN=%q\n' "${bin}"
    printf 'export PORCH_LOG_DIR=%q\n' "${STATE_DIR}/logs"
    printf 'export PORCH_PORT=%q\n' "${PORCH_PORT}"
}

usage() {
    sed -n '2,/^set -o errexit/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
}

# ensure_binaries is never called as part of a && or || list: errexit would
# be off inside it.
case "${1:-}" in
build)
    ensure_binaries
    log "binaries in ${BIN_DIR}"
    ;;
bin-dir)
    ensure_binaries
    echo "${BIN_DIR}"
    ;;
up) cmd_up ;;
down) cmd_down ;;
env) cmd_env ;;
-h | --help | help) usage ;;
*)
    usage
    exit 2
    ;;
esac
