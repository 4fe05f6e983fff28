#!/usr/bin/env bash
# make sbom: a CycloneDX SBOM (JSON) of the variant-controller binary, from
# the modules it links as the image builds it (Dockerfile: GOOS=linux,
# CGO_ENABLED=0, GOARCH amd64 unless SBOM_GOARCH says otherwise), with the Go
# standard library and the licenses found in each module (as evidence), into
# sbom/variant-controller.cdx.json (git-ignored).
#
# cyclonedx-gomod is installed from the Go module proxy at the exact version
# below into the project's tool cache, beside the Kubernetes binaries of
# hack/local-cluster.sh (${XDG_CACHE_HOME:-$HOME/.cache}/variant-controller),
# once; afterwards this works offline.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${ROOT}"

CYCLONEDX_GOMOD_VERSION="v1.10.0"
TOOL_DIR="${XDG_CACHE_HOME:-${HOME}/.cache}/variant-controller/tools/cyclonedx-gomod-${CYCLONEDX_GOMOD_VERSION}"
TOOL="${TOOL_DIR}/cyclonedx-gomod"
OUT="sbom/variant-controller.cdx.json"
GOARCH_TARGET="${SBOM_GOARCH:-amd64}"

if [ ! -x "${TOOL}" ]; then
    echo "sbom: installing github.com/CycloneDX/cyclonedx-gomod@${CYCLONEDX_GOMOD_VERSION} into ${TOOL_DIR}"
    # Built for this machine: the build constraints below are for the
    # analysis, not for the tool.
    GOBIN="${TOOL_DIR}" go install "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@${CYCLONEDX_GOMOD_VERSION}"
fi

# The tool names the main module's version from git (a tag on HEAD, or a
# pseudo-version of HEAD) with a git library that cannot read a linked
# worktree (`git worktree add`) nor objects borrowed from another repository
# (alternates): there, describe HEAD from a temporary local clone.
src="${ROOT}"
if [ "$(git rev-parse --path-format=absolute --git-dir)" != "$(git rev-parse --path-format=absolute --git-common-dir)" ]; then
    head="$(git rev-parse HEAD)"
    tmp="$(mktemp -d)"
    trap 'rm -rf "${tmp}"' EXIT
    git clone --quiet --no-checkout "${ROOT}" "${tmp}/src"
    git -C "${tmp}/src" checkout --quiet --detach "${head}"
    src="${tmp}/src"
    echo "sbom: ${ROOT} is a linked git worktree, which cyclonedx-gomod cannot read; describing its HEAD (${head:0:12}) from a temporary clone: uncommitted changes are not in the SBOM" >&2
fi

mkdir -p sbom
GOOS=linux GOARCH="${GOARCH_TARGET}" CGO_ENABLED=0 \
    "${TOOL}" app -json -std -licenses -main cmd/variant-controller -output "${ROOT}/${OUT}" "${src}"

# The SBOM must describe the controller: its own module, Kubernetes' client,
# and none of what verify-deps keeps out of the binary (kpt's libraries).
missing=()
for module in github.com/porch-variants/variant-controller k8s.io/client-go k8s.io/apiserver; do
    grep -q "\"pkg:golang/${module}@" "${OUT}" || missing+=("${module}")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "sbom: ${OUT} does not list ${missing[*]}; the binary links them: is the module graph complete (go mod download)?" >&2
    exit 1
fi
if grep -q '"pkg:golang/github.com/kptdev/' "${OUT}"; then
    echo "sbom: ${OUT} lists kpt's modules, which cmd/variant-controller must not link (make verify-deps says which import brings them)" >&2
    exit 1
fi
echo "sbom: wrote ${OUT}: the controller and the $(grep -c '"type": "library"' "${OUT}") modules it links (Go's standard library among them; linux/${GOARCH_TARGET}, no cgo), cyclonedx-gomod ${CYCLONEDX_GOMOD_VERSION}"
