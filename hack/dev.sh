#!/usr/bin/env bash
# make dev-up / dev-down: a local cluster with Porch's API (porchsim as an
# aggregated API server), deploy/ installed, the controller running as its
# ServiceAccount and the example fleet applied, for a person to try with
# kubectl. Processes run in the background; logs and PIDs are in the
# cluster's state directory.
source "$(dirname "${BASH_SOURCE[0]}")/lib/process.sh"
cd "${ROOT}"

export CLUSTER_DIR="${CLUSTER_DIR:-/tmp/variant-controller-cluster}"
DEV_DIR="${CLUSTER_DIR}/dev"
# hack/lib/process.sh: our processes' PIDs and logs.
PROC_DIR="${DEV_DIR}"
DEV_STOP_TIMEOUT=10

up() {
    hack/local-cluster.sh up
    eval "$(hack/local-cluster.sh env)"
    mkdir -p "${DEV_DIR}" bin
    for b in variant-controller porchsim-apiserver variantctl; do
        CGO_ENABLED=0 go build -trimpath -o "bin/${b}" "./cmd/${b}"
    done

    # Porch: the Repository CRD, the example's repositories, then the API
    # server with the blueprint published as revision 1.
    kubectl apply -f hack/crd/ >/dev/null
    kubectl wait --for=condition=Established --timeout=60s crd/repositories.config.porch.kpt.dev >/dev/null
    kubectl create namespace platform --dry-run=client -o yaml | kubectl apply -f - >/dev/null
    kubectl apply -f examples/fleet/repositories.yaml >/dev/null
    proc_stop porchsim-apiserver "${DEV_STOP_TIMEOUT}"
    proc_start porchsim-apiserver bin/porchsim-apiserver --kubeconfig "${KUBECONFIG}" --secure-port 9443 --bind-address 127.0.0.1 \
        --package-namespace platform --package blueprints/app=examples/packages/app
    kubectl apply -f hack/e2e/porch-apiservice.yaml >/dev/null
    proc_wait_for porchsim-apiserver $(($(date +%s) + 90)) "the porch.kpt.dev APIService (at most 90s)" \
        kubectl wait --for=condition=Available --timeout=5s apiservice/v1alpha1.porch.kpt.dev ||
        die "porchsim did not serve Porch's API; its log is ${DEV_DIR}/porchsim-apiserver.log"

    # Ours, as a user installs it; the binary runs as a process with the
    # ServiceAccount's token (no kubelet here to run the Deployment's pods).
    kubectl apply -k deploy/ >/dev/null
    kubectl wait --for=condition=Established --timeout=60s \
        crd/packagevariants.config.porch.kpt.dev crd/packagevariantsets.config.porch.kpt.dev >/dev/null
    local token server
    token="$(kubectl -n variant-controller-system create token variant-controller --duration=24h)"
    server="$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')"
    kubectl config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"${DEV_DIR}/ca.crt"
    KUBECONFIG="${DEV_DIR}/controller.kubeconfig" kubectl config set-cluster dev --server="${server}" \
        --certificate-authority="${DEV_DIR}/ca.crt" --embed-certs >/dev/null
    KUBECONFIG="${DEV_DIR}/controller.kubeconfig" kubectl config set-credentials controller --token="${token}" >/dev/null
    KUBECONFIG="${DEV_DIR}/controller.kubeconfig" kubectl config set-context dev --cluster=dev --user=controller >/dev/null
    KUBECONFIG="${DEV_DIR}/controller.kubeconfig" kubectl config use-context dev >/dev/null
    proc_stop variant-controller "${DEV_STOP_TIMEOUT}"
    proc_start variant-controller bin/variant-controller --kubeconfig "${DEV_DIR}/controller.kubeconfig" --reconcilers='*' \
        --leader-election-namespace variant-controller-system \
        --health-probe-bind-address 127.0.0.1:18081 --metrics-bind-address 127.0.0.1:18080 --metrics-secure=false

    kubectl apply -f examples/fleet/ >/dev/null
    cat <<MSG

The example fleet is applied. Try:

  eval "\$(CLUSTER_DIR=${CLUSTER_DIR} hack/local-cluster.sh env)"
  kubectl -n platform get packagevariantsets,packagevariants
  kubectl -n platform get packagerevisions
  kubectl -n platform describe packagevariant staging-us-east-app

Logs: ${DEV_DIR}/variant-controller.log, ${DEV_DIR}/porchsim-apiserver.log
Metrics: http://127.0.0.1:18080/metrics (plain HTTP for trying it out: --metrics-secure=false)
Stop everything: make dev-down
MSG
}

down() {
    proc_stop variant-controller "${DEV_STOP_TIMEOUT}"
    proc_stop porchsim-apiserver "${DEV_STOP_TIMEOUT}"
    hack/local-cluster.sh down
}

case "${1:-}" in
up) up ;;
down) down ;;
*) echo "usage: hack/dev.sh up|down" >&2; exit 2 ;;
esac
