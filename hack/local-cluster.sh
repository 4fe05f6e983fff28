#!/usr/bin/env bash
# A local Kubernetes control plane for development and end-to-end tests: etcd,
# kube-apiserver and kube-controller-manager as plain processes on 127.0.0.1,
# no kubelet, no nodes, no containers.
#
#   hack/local-cluster.sh up      start it (or say it is already up)
#   hack/local-cluster.sh down    stop it and remove its state directory
#   hack/local-cluster.sh env     print `export KUBECONFIG=... PATH=...` (and
#                                 KUBE_AUDIT_LOG=... when auditing is on)
#   hack/local-cluster.sh build   only build (or find) the cached binaries
#
#   eval "$(hack/local-cluster.sh env)"; kubectl get ns
#
# `make cluster-up` and `make cluster-down` run the first two.
#
# kube-apiserver, kube-controller-manager and kubectl are built from the
# separate module hack/k8s (pinned to k8s.io/kubernetes there) into
# ${XDG_CACHE_HOME:-$HOME/.cache}/variant-controller/k8s-<version>/bin, and
# rebuilt only when hack/k8s/go.mod or go.sum change. Cold (empty Go build
# cache) that takes about 15 minutes on two cores; with the Go build cache
# warm, 20-40s of linking; afterwards nothing. etcd is Debian's etcd-server
# package, installed with apt-get when no etcd is on PATH.
#
# The apiserver has RBAC, service account tokens and the aggregation layer;
# the controller manager runs only the controllers that make sense without
# nodes (see KCM_CONTROLLERS).
#
# Aggregated API servers on loopback: Endpoints and EndpointSlices refuse
# loopback addresses and there is no kube-proxy to route a ClusterIP, so a
# server listening on 127.0.0.1 is registered as an APIService whose Service
# is `type: ExternalName` with `externalName: localhost`; the aggregator then
# proxies to https://localhost:<port of the APIService's service>. That only
# works with --enable-aggregator-routing=false (the default, set here): with
# routing through endpoints the aggregator rejects ExternalName Services
# ("unsupported service type"). The aggregator checks the server's certificate
# for the name <service>.<namespace>.svc against the APIService's caBundle
# (or not at all with insecureSkipTLSVerify), and authenticates itself with
# the front-proxy-client certificate (pki/front-proxy-ca.crt) and
# X-Remote-User/X-Remote-Group headers.
#
# Auditing (APISERVER_AUDIT_POLICY): --audit-log-mode=blocking writes each
# event with one write(2) to the file before the request's handler returns,
# and the response is finished (last bytes, end of stream) only after the
# handler returns: once a client has its whole answer, the request's final
# event (ResponseComplete, or Panic) is in the file. (The exceptions: a
# request that hits the apiserver's timeout gets its 504 first and its event
# when the handler finally ends; a watch whose client goes away ends when
# the apiserver notices.) The batch mode queues events for a goroutine that
# writes them later (no bound on when a client can expect its request in
# the file) and drops events when its buffer is full. --audit-log-maxsize=0
# writes to the file as it is (opened O_APPEND), with no rotation at all:
# the default of 100 MB would rename the file in the middle of a run, under
# a reader that holds an offset into it. Requests proxied to aggregated API
# servers (porch.kpt.dev) are audited by the kube-apiserver like its own.
#
# Environment (all optional):
#   CLUSTER_DIR            state: certificates, kubeconfigs, etcd data, PIDs,
#                          logs/ (default /tmp/variant-controller-cluster)
#   KUBE_CACHE_DIR         where the binaries are cached (default above)
#   ETCD                   etcd binary to use instead of the one on PATH
#   ETCD_PORT, ETCD_PEER_PORT, APISERVER_PORT, KCM_PORT
#                          fixed ports; when unset, the first free port from
#                          22379, 22380, 26443 and 20257 upwards is taken
#   SERVICE_CLUSTER_IP_RANGE  (default 10.0.0.0/24)
#   KCM_CONTROLLERS        kube-controller-manager --controllers value
#   CLUSTER_WAIT_TIMEOUT   seconds `up` waits for readiness (default 120)
#   APISERVER_AUDIT_POLICY an audit policy file (audit.k8s.io/v1 Policy, e.g.
#                          hack/e2e/audit-policy.yaml): `up` copies it
#                          to ${CLUSTER_DIR}/audit-policy.yaml and the
#                          apiserver writes one JSON event per line to
#                          ${CLUSTER_DIR}/logs/audit.log (`env` prints it as
#                          KUBE_AUDIT_LOG). Unset: no auditing. See "Auditing".
#   STOP_TIMEOUT           seconds `down` waits after SIGTERM before SIGKILL
#                          (default 15)
source "$(dirname "${BASH_SOURCE[0]}")/lib/process.sh"

K8S_MODULE_DIR="${ROOT}/hack/k8s"
K8S_VERSION="$(awk '$1 == "k8s.io/kubernetes" { print $2 } $1 == "require" && $2 == "k8s.io/kubernetes" { print $3 }' "${K8S_MODULE_DIR}/go.mod")"
if [ -z "${K8S_VERSION}" ]; then
    echo "local-cluster: cannot find the k8s.io/kubernetes requirement in ${K8S_MODULE_DIR}/go.mod" >&2
    exit 1
fi

CLUSTER_DIR="${CLUSTER_DIR:-/tmp/variant-controller-cluster}"
# hack/lib/process.sh: the components' PIDs and logs.
PROC_DIR="${CLUSTER_DIR}"
PROC_LOG_DIR="${CLUSTER_DIR}/logs"
KUBE_CACHE_DIR="${KUBE_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/variant-controller/k8s-${K8S_VERSION}}"
BIN_DIR="${KUBE_CACHE_DIR}/bin"
SERVICE_CLUSTER_IP_RANGE="${SERVICE_CLUSTER_IP_RANGE:-10.0.0.0/24}"
# The first address of the range: the `kubernetes` Service's ClusterIP, which
# the serving certificate must name.
KUBERNETES_SERVICE_IP="${KUBERNETES_SERVICE_IP:-$(echo "${SERVICE_CLUSTER_IP_RANGE%/*}" | awk -F. '{ printf "%d.%d.%d.%d", $1, $2, $3, $4 + 1 }')}"
# garbage-collector: ownerReferences and foreground/orphan deletion.
# namespace: deleting a namespace deletes its contents.
# serviceaccount, serviceaccount-token: the `default` ServiceAccount in every
#   namespace, and legacy token Secrets.
# clusterrole-aggregation: ClusterRoles with an aggregationRule (deploy/rbac's
#   role takes the injection roles that way).
KCM_CONTROLLERS="${KCM_CONTROLLERS:-garbage-collector-controller,namespace-controller,serviceaccount-controller,serviceaccount-token-controller,clusterrole-aggregation-controller}"
CLUSTER_WAIT_TIMEOUT="${CLUSTER_WAIT_TIMEOUT:-120}"
STOP_TIMEOUT="${STOP_TIMEOUT:-15}"

# How to run this script again on the same cluster, for the hints it prints.
SELF="hack/local-cluster.sh"
if [ "${CLUSTER_DIR}" != /tmp/variant-controller-cluster ]; then
    SELF="CLUSTER_DIR=${CLUSTER_DIR} ${SELF}"
fi

BINARIES=(kube-apiserver kube-controller-manager kubectl)
# Stopped in this order: the clients of etcd before etcd.
COMPONENTS=(kube-controller-manager kube-apiserver etcd)
# Only a directory holding this file is ever removed by `down`.
MARKER=".variant-controller-cluster"
# With auditing on, the policy is copied here; `env` and `up` look for it to
# know whether the cluster audits.
AUDIT_POLICY_COPY="audit-policy.yaml"
AUDIT_LOG_NAME="logs/audit.log"

# source_hash prints the hash of what the binaries are built from.
source_hash() {
    cat "${K8S_MODULE_DIR}/go.mod" "${K8S_MODULE_DIR}/go.sum" | sha256sum | cut -d' ' -f1
}

ensure_binaries() {
    local want have missing=0 b
    want="$(source_hash)"
    have="$(cat "${BIN_DIR}/.source-hash" 2>/dev/null || true)"
    for b in "${BINARIES[@]}"; do
        [ -x "${BIN_DIR}/${b}" ] || missing=1
    done
    if [ "${missing}" -eq 0 ] && [ "${want}" = "${have}" ]; then
        return 0
    fi
    command -v go >/dev/null || die "go is needed to build Kubernetes ${K8S_VERSION}; install Go or put it on PATH"
    if [ "${missing}" -ne 0 ]; then
        log "building Kubernetes ${K8S_VERSION} (${BINARIES[*]}) into ${BIN_DIR}; with an empty Go build cache this takes about 15 minutes on two cores"
    else
        log "hack/k8s/go.mod or go.sum changed; rebuilding ${BINARIES[*]} into ${BIN_DIR}"
    fi

    local major minor ldflags p pkgs=() tmp start
    major="$(echo "${K8S_VERSION#v}" | cut -d. -f1)"
    minor="$(echo "${K8S_VERSION#v}" | cut -d. -f2)"
    # What `kubectl version` and /version report; Kubernetes' own build sets
    # the same variables.
    ldflags="-s -w"
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ldflags+=" -X ${p}.gitVersion=${K8S_VERSION} -X ${p}.gitMajor=${major} -X ${p}.gitMinor=${minor} -X ${p}.gitTreeState=clean"
    done
    for b in "${BINARIES[@]}"; do
        pkgs+=("k8s.io/kubernetes/cmd/${b}")
    done

    mkdir -p "${BIN_DIR}"
    tmp="$(mktemp -d "${KUBE_CACHE_DIR}/build.XXXXXX")"
    # shellcheck disable=SC2064 # tmp is fixed now; the trap must not see a later value.
    trap "rm -rf $(printf '%q' "${tmp}")" EXIT
    start="$(date +%s)"
    # One `go build` for all three so shared packages compile in parallel.
    # GOWORK=off: a go.work above the repository must not pull hack/k8s into
    # another module graph.
    if ! (cd "${K8S_MODULE_DIR}" && CGO_ENABLED=0 GOWORK=off go build -trimpath -ldflags "${ldflags}" -o "${tmp}/" "${pkgs[@]}"); then
        rm -rf "${tmp}"
        die "building Kubernetes ${K8S_VERSION} failed (see the go output above)"
    fi
    rm -f "${BIN_DIR}/.source-hash"
    for b in "${BINARIES[@]}"; do
        mv -f "${tmp}/${b}" "${BIN_DIR}/${b}"
    done
    rm -rf "${tmp}"
    trap - EXIT
    # Written last: an interrupted build is redone rather than trusted.
    echo "${want}" >"${BIN_DIR}/.source-hash"
    log "built ${BINARIES[*]} in $(($(date +%s) - start))s"
}

ensure_etcd() {
    if [ -n "${ETCD:-}" ]; then
        [ -x "${ETCD}" ] || die "ETCD=${ETCD} is not an executable file"
        return 0
    fi
    if ETCD="$(command -v etcd)"; then
        return 0
    fi
    command -v apt-get >/dev/null || die "etcd is not on PATH and there is no apt-get to install it; install etcd 3.4 or newer, or set ETCD=/path/to/etcd"
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || die "etcd is not on PATH; install Debian's etcd-server package (as root: apt-get install etcd-server), or set ETCD=/path/to/etcd"
        sudo=(sudo)
    fi
    log "etcd is not on PATH; installing Debian's etcd-server package with apt-get"
    "${sudo[@]}" apt-get update -qq >&2 || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends etcd-server >&2 ||
        die "apt-get install etcd-server failed"
    ETCD="$(command -v etcd)" || die "etcd-server is installed but there is still no etcd on PATH"
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

# gen_ca NAME CN writes NAME.crt and NAME.key: a self-signed CA.
gen_ca() {
    quiet openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 3650 \
        -keyout "${PKI}/$1.key" -out "${PKI}/$1.crt" -subj "/CN=$2" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"
}

# gen_cert NAME CA SUBJECT USAGE [SAN] writes NAME.crt and NAME.key signed by
# CA. USAGE is serverAuth or clientAuth.
gen_cert() {
    local name="$1" ca="$2" subject="$3" usage="$4" san="${5:-}"
    quiet openssl req -new -newkey rsa:2048 -nodes -sha256 \
        -keyout "${PKI}/${name}.key" -out "${PKI}/${name}.csr" -subj "${subject}"
    {
        echo "basicConstraints=critical,CA:FALSE"
        echo "keyUsage=critical,digitalSignature,keyEncipherment"
        echo "extendedKeyUsage=${usage}"
        [ -z "${san}" ] || echo "subjectAltName=${san}"
    } >"${PKI}/${name}.ext"
    quiet openssl x509 -req -sha256 -days 365 -in "${PKI}/${name}.csr" \
        -CA "${PKI}/${ca}.crt" -CAkey "${PKI}/${ca}.key" -CAcreateserial \
        -extfile "${PKI}/${name}.ext" -out "${PKI}/${name}.crt"
    rm -f "${PKI}/${name}.csr" "${PKI}/${name}.ext"
}

gen_pki() {
    mkdir -p "${PKI}"
    chmod 700 "${PKI}"
    gen_ca ca "variant-controller-local-ca"
    gen_cert apiserver ca "/CN=kube-apiserver" serverAuth \
        "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:${KUBERNETES_SERVICE_IP}"
    gen_cert admin ca "/O=system:masters/CN=kubernetes-admin" clientAuth
    gen_cert controller-manager ca "/CN=system:kube-controller-manager" clientAuth
    # The aggregation layer: the apiserver presents front-proxy-client to
    # aggregated servers, which trust the request headers only from a
    # certificate of front-proxy-ca with that name.
    gen_ca front-proxy-ca "variant-controller-local-front-proxy-ca"
    gen_cert front-proxy-client front-proxy-ca "/CN=front-proxy-client" clientAuth
    quiet openssl genrsa -out "${PKI}/sa.key" 2048
    quiet openssl rsa -in "${PKI}/sa.key" -pubout -out "${PKI}/sa.pub"
    rm -f "${PKI}"/*.srl
}

# write_kubeconfig FILE CERT writes a kubeconfig for the client certificate
# CERT, certificates embedded so the file can be copied anywhere.
write_kubeconfig() {
    local file="$1" cert="$2"
    cat >"${file}" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: variant-controller-local
  cluster:
    server: https://127.0.0.1:${APISERVER_PORT}
    certificate-authority-data: $(base64 -w0 <"${PKI}/ca.crt")
users:
- name: ${cert}
  user:
    client-certificate-data: $(base64 -w0 <"${PKI}/${cert}.crt")
    client-key-data: $(base64 -w0 <"${PKI}/${cert}.key")
contexts:
- name: variant-controller-local
  context:
    cluster: variant-controller-local
    user: ${cert}
current-context: variant-controller-local
EOF
    chmod 600 "${file}"
}

# wait_for NAME DESCRIPTION COMMAND... retries COMMAND until it succeeds;
# when NAME dies or the deadline passes first, the script ends (the EXIT trap
# stops what was started).
wait_for() {
    proc_wait_for "$1" "${DEADLINE}" "$2 (at most ${CLUSTER_WAIT_TIMEOUT}s)" "${@:3}" ||
        die "the cluster did not come up; logs are in ${CLUSTER_DIR}/logs (${SELF} down removes them)"
}

kubectl_admin() {
    "${BIN_DIR}/kubectl" --kubeconfig "${CLUSTER_DIR}/kubeconfig" --request-timeout=5s "$@"
}

readyz_ok() {
    [ "$(kubectl_admin get --raw /readyz 2>/dev/null)" = "ok" ]
}

kcm_healthy() {
    [ "$(curl -sk --max-time 5 "https://127.0.0.1:${KCM_PORT}/healthz")" = "ok" ]
}

# all_running succeeds when every component of the cluster in CLUSTER_DIR is
# running, and loads its ports.
all_running() {
    local name
    for name in "${COMPONENTS[@]}"; do
        proc_pid "${name}" >/dev/null || return 1
    done
    [ -f "${CLUSTER_DIR}/ports.env" ] || return 1
    # shellcheck source=/dev/null
    source "${CLUSTER_DIR}/ports.env"
}

stop_components() {
    local name
    for name in "${COMPONENTS[@]}"; do
        proc_stop "${name}" "${STOP_TIMEOUT}"
    done
}

# remove_state_dir removes CLUSTER_DIR, but only one this script made.
remove_state_dir() {
    [ -e "${CLUSTER_DIR}" ] || return 0
    if [ ! -f "${CLUSTER_DIR}/${MARKER}" ]; then
        die "${CLUSTER_DIR} exists but was not made by this script (no ${MARKER}); remove it yourself or set CLUSTER_DIR"
    fi
    rm -rf "${CLUSTER_DIR}"
}

# check_audit_policy resolves APISERVER_AUDIT_POLICY to an absolute path and
# checks that it is a readable file (its contents are the apiserver's to
# validate: a bad policy makes it exit, and `up` shows its log).
check_audit_policy() {
    [ -n "${APISERVER_AUDIT_POLICY:-}" ] || return 0
    { [ -f "${APISERVER_AUDIT_POLICY}" ] && [ -r "${APISERVER_AUDIT_POLICY}" ]; } ||
        die "APISERVER_AUDIT_POLICY=${APISERVER_AUDIT_POLICY} is not a readable file"
    APISERVER_AUDIT_POLICY="$(cd "$(dirname "${APISERVER_AUDIT_POLICY}")" && pwd -P)/$(basename "${APISERVER_AUDIT_POLICY}")"
}

# audit_matches succeeds when the running cluster audits as asked: with the
# same policy when APISERVER_AUDIT_POLICY is set, not at all otherwise.
audit_matches() {
    if [ -n "${APISERVER_AUDIT_POLICY:-}" ]; then
        cmp -s "${APISERVER_AUDIT_POLICY}" "${CLUSTER_DIR}/${AUDIT_POLICY_COPY}"
    else
        [ ! -f "${CLUSTER_DIR}/${AUDIT_POLICY_COPY}" ]
    fi
}

cmd_up() {
    check_audit_policy
    if [ -f "${CLUSTER_DIR}/${MARKER}" ]; then
        if all_running; then
            # The audit settings are fixed at start; a caller that asked for
            # them must not get a cluster without (or with other) ones.
            audit_matches ||
                die "the cluster in ${CLUSTER_DIR} is running with other audit settings than APISERVER_AUDIT_POLICY=${APISERVER_AUDIT_POLICY:-} asks for; run ${SELF} down first"
            # Running but perhaps busy: wait rather than replace a cluster
            # someone is using.
            DEADLINE=$(($(date +%s) + CLUSTER_WAIT_TIMEOUT))
            until readyz_ok; do
                [ "$(date +%s)" -lt "${DEADLINE}" ] ||
                    die "the cluster in ${CLUSTER_DIR} is running but not ready after ${CLUSTER_WAIT_TIMEOUT}s; see ${CLUSTER_DIR}/logs, or run ${SELF} down first"
                sleep 0.5
            done
            log "already up: https://127.0.0.1:${APISERVER_PORT} (state in ${CLUSTER_DIR})"
            log "use it with: eval \"\$(${SELF} env)\""
            return 0
        fi
        log "${CLUSTER_DIR} holds a cluster that is not running (a reboot, a crash or an interrupted up); replacing it"
        stop_components
    fi
    remove_state_dir

    ensure_binaries
    ensure_etcd
    command -v openssl >/dev/null || die "openssl is needed to make the cluster's certificates"
    command -v curl >/dev/null || die "curl is needed to check kube-controller-manager's health"

    pick_port ETCD_PORT 22379
    pick_port ETCD_PEER_PORT 22380
    pick_port APISERVER_PORT 26443
    pick_port KCM_PORT 20257

    mkdir -p "${CLUSTER_DIR}/logs"
    touch "${CLUSTER_DIR}/${MARKER}"
    # A failed or interrupted `up` leaves nothing running; the state directory
    # stays for its logs and the next `up` replaces it.
    trap 'stop_components' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    PKI="${CLUSTER_DIR}/pki"
    cat >"${CLUSTER_DIR}/ports.env" <<EOF
ETCD_PORT=${ETCD_PORT}
ETCD_PEER_PORT=${ETCD_PEER_PORT}
APISERVER_PORT=${APISERVER_PORT}
KCM_PORT=${KCM_PORT}
EOF
    local audit_flags=()
    if [ -n "${APISERVER_AUDIT_POLICY:-}" ]; then
        # A copy: editing the repository's file during a run changes nothing,
        # and `env` knows from it that this cluster audits.
        cp "${APISERVER_AUDIT_POLICY}" "${CLUSTER_DIR}/${AUDIT_POLICY_COPY}"
        # Blocking, no rotation, JSON: see "Auditing" at the top of this file.
        audit_flags=(
            --audit-policy-file="${CLUSTER_DIR}/${AUDIT_POLICY_COPY}"
            --audit-log-path="${CLUSTER_DIR}/${AUDIT_LOG_NAME}"
            --audit-log-format=json
            --audit-log-mode=blocking
            --audit-log-maxsize=0
        )
    fi
    log "generating certificates in ${PKI}"
    gen_pki
    write_kubeconfig "${CLUSTER_DIR}/kubeconfig" admin
    write_kubeconfig "${CLUSTER_DIR}/controller-manager.kubeconfig" controller-manager

    DEADLINE=$(($(date +%s) + CLUSTER_WAIT_TIMEOUT))

    log "starting etcd ($("${ETCD}" --version | awk 'NR == 1 { print $3 }')) on 127.0.0.1:${ETCD_PORT}"
    proc_start etcd "${ETCD}" \
        --name=variant-controller-local \
        --data-dir="${CLUSTER_DIR}/etcd" \
        --listen-client-urls="http://127.0.0.1:${ETCD_PORT}" \
        --advertise-client-urls="http://127.0.0.1:${ETCD_PORT}" \
        --listen-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
        --initial-advertise-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
        --initial-cluster="variant-controller-local=http://127.0.0.1:${ETCD_PEER_PORT}" \
        --logger=zap \
        --log-outputs=stderr
    wait_for etcd "etcd on 127.0.0.1:${ETCD_PORT}" \
        curl -sf --max-time 2 "http://127.0.0.1:${ETCD_PORT}/health"

    # --enable-aggregator-routing=false: see the top of this file.
    # --endpoint-reconciler-type=none: the advertise address is loopback, which
    # an Endpoints object may not hold, and nothing without pods needs the
    # `kubernetes` Service's endpoints.
    log "starting kube-apiserver on https://127.0.0.1:${APISERVER_PORT}${APISERVER_AUDIT_POLICY:+, audit log ${CLUSTER_DIR}/${AUDIT_LOG_NAME}}"
    proc_start kube-apiserver "${BIN_DIR}/kube-apiserver" \
        --etcd-servers="http://127.0.0.1:${ETCD_PORT}" \
        --bind-address=127.0.0.1 \
        --advertise-address=127.0.0.1 \
        --secure-port="${APISERVER_PORT}" \
        --tls-cert-file="${PKI}/apiserver.crt" \
        --tls-private-key-file="${PKI}/apiserver.key" \
        --client-ca-file="${PKI}/ca.crt" \
        --authorization-mode=RBAC \
        --service-cluster-ip-range="${SERVICE_CLUSTER_IP_RANGE}" \
        --service-account-issuer=https://kubernetes.default.svc.cluster.local \
        --service-account-key-file="${PKI}/sa.pub" \
        --service-account-signing-key-file="${PKI}/sa.key" \
        --requestheader-client-ca-file="${PKI}/front-proxy-ca.crt" \
        --requestheader-allowed-names=front-proxy-client \
        --requestheader-extra-headers-prefix=X-Remote-Extra- \
        --requestheader-group-headers=X-Remote-Group \
        --requestheader-username-headers=X-Remote-User \
        --proxy-client-cert-file="${PKI}/front-proxy-client.crt" \
        --proxy-client-key-file="${PKI}/front-proxy-client.key" \
        --enable-aggregator-routing=false \
        --endpoint-reconciler-type=none \
        "${audit_flags[@]}"
    wait_for kube-apiserver "kube-apiserver's /readyz" readyz_ok

    log "starting kube-controller-manager (${KCM_CONTROLLERS})"
    proc_start kube-controller-manager "${BIN_DIR}/kube-controller-manager" \
        --kubeconfig="${CLUSTER_DIR}/controller-manager.kubeconfig" \
        --authentication-kubeconfig="${CLUSTER_DIR}/controller-manager.kubeconfig" \
        --authorization-kubeconfig="${CLUSTER_DIR}/controller-manager.kubeconfig" \
        --bind-address=127.0.0.1 \
        --secure-port="${KCM_PORT}" \
        --controllers="${KCM_CONTROLLERS}" \
        --use-service-account-credentials=true \
        --service-account-private-key-file="${PKI}/sa.key" \
        --root-ca-file="${PKI}/ca.crt" \
        --leader-elect=false
    wait_for kube-controller-manager "kube-controller-manager's /healthz" kcm_healthy
    if [[ ",${KCM_CONTROLLERS}," == *",serviceaccount-controller,"* ]]; then
        # The first object a controller writes: proof that the controller
        # manager is authorised and its informers have synced.
        wait_for kube-controller-manager "the default ServiceAccount in namespace default" \
            kubectl_admin -n default get serviceaccount default
    fi
    wait_for kube-apiserver "kubectl get namespaces" kubectl_admin get namespaces

    trap - EXIT INT TERM
    log "up: https://127.0.0.1:${APISERVER_PORT}, kubeconfig ${CLUSTER_DIR}/kubeconfig, logs in ${CLUSTER_DIR}/logs"
    log "use it with: eval \"\$(${SELF} env)\""
}

cmd_down() {
    if [ ! -e "${CLUSTER_DIR}" ]; then
        log "nothing to do: ${CLUSTER_DIR} does not exist"
        return 0
    fi
    [ -f "${CLUSTER_DIR}/${MARKER}" ] ||
        die "${CLUSTER_DIR} was not made by this script (no ${MARKER}); not touching it"
    stop_components
    remove_state_dir
    log "down: removed ${CLUSTER_DIR}"
}

cmd_env() {
    if [ ! -f "${CLUSTER_DIR}/kubeconfig" ]; then
        log "warning: ${CLUSTER_DIR}/kubeconfig does not exist yet; run ${SELF} up"
    fi
    printf 'export KUBECONFIG=%q\n' "${CLUSTER_DIR}/kubeconfig"
    # shellcheck disable=SC2016 # $PATH is for the shell that evaluates this.
    printf 'export PATH=%q:"$PATH"\n' "${BIN_DIR}"
    if [ -f "${CLUSTER_DIR}/${AUDIT_POLICY_COPY}" ]; then
        printf 'export KUBE_AUDIT_LOG=%q\n' "${CLUSTER_DIR}/${AUDIT_LOG_NAME}"
    fi
}

usage() {
    sed -n '2,/^[^#]/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
}

case "${1:-}" in
up) cmd_up ;;
down) cmd_down ;;
env) cmd_env ;;
build) ensure_binaries && log "binaries in ${BIN_DIR}" ;;
-h | --help | help) usage ;;
*)
    usage
    exit 2
    ;;
esac
