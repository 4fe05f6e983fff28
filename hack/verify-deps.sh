#!/usr/bin/env bash
# Fails when the variant-controller binary links what only porchsim and
# variantctl need: kpt's libraries and the KRM functions (clone, render and
# upgrade imitate Porch; the controller only talks to Porch's API) pull in
# hundreds of packages, a WebAssembly runtime among them.
set -o errexit
set -o nounset
set -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
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
