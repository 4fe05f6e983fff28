# Sourced first by every script in hack/ (`source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"`,
# or lib/process.sh, which sources this):
# strict mode, ROOT (the repository, resolved), and log/die, which prefix
# their message with the script's name. It does not change directory: a
# script that works in the repository does `cd "${ROOT}"` itself (one that
# takes paths from its caller, like local-cluster.sh, resolves them first).
set -o errexit
set -o nounset
set -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
# The name log and die print: the script's (the outermost source), without .sh.
LOG_NAME="$(basename "${BASH_SOURCE[-1]}" .sh)"

log() {
    echo "${LOG_NAME}: $*" >&2
}

die() {
    log "$*"
    exit 1
}
