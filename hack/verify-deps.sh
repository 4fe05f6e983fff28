#!/usr/bin/env bash
# Fails when the variant-controller binary links what only porchsim and
# variantctl need: kpt's libraries and the KRM functions (clone, render and
# upgrade imitate Porch; the controller only talks to Porch's API) pull in
# hundreds of packages, a WebAssembly runtime among them. Also fails when
# porchsim's API server links a controller (it serves Porch, it does not
# reconcile), or when pkg/offline reaches a cluster itself (variantctl
# does, and hands the runner what it read).
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${ROOT}"

forbidden='^(github\.com/kptdev/|github\.com/bytecodealliance/|github\.com/porch-variants/variant-controller/pkg/(porchsim|offline))'
found="$(go list -deps ./cmd/variant-controller | grep -E "${forbidden}" || true)"
if [ -n "${found}" ]; then
    echo "verify-deps: cmd/variant-controller must not depend on porchsim, pkg/offline or kpt's libraries; it imports:" >&2
    echo "${found}" | sed 's/^/  /' >&2
    echo "verify-deps: 'go mod why -m <module>' or 'go list -deps -f \"{{.ImportPath}}: {{.Imports}}\" ./cmd/variant-controller' shows the path" >&2
    exit 1
fi
echo "verify-deps: cmd/variant-controller links neither porchsim nor kpt's libraries"

found="$(go list -deps ./cmd/porchsim-apiserver | grep -E '^github\.com/porch-variants/variant-controller/pkg/(controller/|offline$)' || true)"
if [ -n "${found}" ]; then
    echo "verify-deps: cmd/porchsim-apiserver must not depend on the controllers or their offline runner; it imports:" >&2
    echo "${found}" | sed 's/^/  /' >&2
    exit 1
fi
echo "verify-deps: cmd/porchsim-apiserver links no controller"

found="$(go list -f '{{.ImportPath}}: {{join .Imports " "}}' ./pkg/offline/... | grep -E 'k8s\.io/client-go/(rest|transport|tools/clientcmd|discovery)( |$)' || true)"
if [ -n "${found}" ]; then
    echo "verify-deps: pkg/offline must not build cluster clients (rest configs, transports, kubeconfigs, discovery): cmd/variantctl does; found:" >&2
    echo "${found}" | sed 's/^/  /' >&2
    exit 1
fi
echo "verify-deps: pkg/offline builds no cluster client"
