#!/usr/bin/env bash
# Regenerates everything derived from the API types in pkg/apis:
#   - deepcopy and register code next to the types,
#   - the typed clientset, listers and informers in pkg/generated,
#   - the OpenAPI definitions of the Porch types in pkg/generated/openapi
#     (served by cmd/porchsim-apiserver; the generic API server needs them
#     for server-side apply and kubectl explain),
#   - the CRDs in deploy/crd (and Porch's Repository CRD in hack/crd, for
#     local clusters and tests; Porch installs the real one).
# Downloads what it needs (the code generators and controller-gen at the
# versions pinned here and in go.mod); works offline once they are cached.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${ROOT}"

MODULE="$(go list -m)"
CONTROLLER_GEN_VERSION="${CONTROLLER_GEN_VERSION:-v0.23.0}"
# `go list -m -f {{.Dir}}` prints nothing for a module that is not in the
# module cache yet (a fresh machine), so download it first; a no-op when it
# is there. The version is the one go.mod pins.
CODEGEN_VERSION="$(go list -m -f '{{.Version}}' k8s.io/code-generator)"
echo "Making sure k8s.io/code-generator@${CODEGEN_VERSION} is in the module cache"
go mod download k8s.io/code-generator
CODEGEN_PKG="$(go list -m -f '{{.Dir}}' k8s.io/code-generator)"
if [ -z "${CODEGEN_PKG}" ] || [ ! -f "${CODEGEN_PKG}/kube_codegen.sh" ]; then
    echo "update-codegen: k8s.io/code-generator@${CODEGEN_VERSION} has no kube_codegen.sh in the module cache (${CODEGEN_PKG:-no directory}); check 'go mod download k8s.io/code-generator'" >&2
    exit 1
fi

# shellcheck source=/dev/null
source "${CODEGEN_PKG}/kube_codegen.sh"

kube::codegen::gen_helpers \
    --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
    "${ROOT}/pkg/apis"

kube::codegen::gen_register \
    --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
    "${ROOT}/pkg/apis"

kube::codegen::gen_client \
    --with-watch \
    --output-dir "${ROOT}/pkg/generated" \
    --output-pkg "${MODULE}/pkg/generated" \
    --plural-exceptions "PackageRevisionResources:PackageRevisionResources" \
    --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
    "${ROOT}/pkg/apis"

# The API rule report lists the conventions Porch's wire types break (we keep
# Porch's field names and list shapes); it is rewritten on every run, so a new
# violation shows up as a diff in review.
kube::codegen::gen_openapi \
    --output-dir "${ROOT}/pkg/generated/openapi" \
    --output-pkg "${MODULE}/pkg/generated/openapi" \
    --report-filename "${ROOT}/pkg/generated/openapi/api-rule-violations.list" \
    --update-report \
    --output-model-name-file zz_generated.model_name.go \
    --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
    "${ROOT}/pkg/apis"

echo "Generating CRDs with controller-gen ${CONTROLLER_GEN_VERSION}"
crd_tmp="$(mktemp -d)"
trap 'rm -rf "${crd_tmp}"' EXIT
go run "sigs.k8s.io/controller-tools/cmd/controller-gen@${CONTROLLER_GEN_VERSION}" \
    crd:crdVersions=v1 \
    paths="./pkg/apis/config/..." \
    output:crd:dir="${crd_tmp}"
# An int-or-string field's CEL rule is costed by the longest string the
# field may hold; with no maxLength that is the whole request, and the API
# server refuses the CRD (the rule on a wave's maxConcurrent is 19 times over
# its budget). The API server takes maxLength beside
# x-kubernetes-int-or-string (it bounds only the string form), but
# controller-gen writes it only on plain strings, so it is added here: "100%"
# is the longest value the rule accepts.
set_file="${crd_tmp}/config.porch.kpt.dev_packagevariantsets.yaml"
awk '/^ *maxConcurrent:$/ { inside = 1 }
     inside && /^ *x-kubernetes-int-or-string: true$/ {
         indent = $0; sub(/x-kubernetes-int-or-string.*/, "", indent)
         print indent "maxLength: 4"; inside = 0; added++ }
     { print }
     END { if (added != 1) { print "update-codegen: maxConcurrent int-or-string not found once in the set CRD" > "/dev/stderr"; exit 1 } }' \
    "${set_file}" >"${set_file}.new"
mv "${set_file}.new" "${set_file}"
mkdir -p deploy/crd hack/crd
rm -f deploy/crd/*.yaml hack/crd/*.yaml
mv "${crd_tmp}/config.porch.kpt.dev_repositories.yaml" hack/crd/
mv "${crd_tmp}"/*.yaml deploy/crd/
