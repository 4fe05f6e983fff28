#!/usr/bin/env bash
# Fails when the README's "Layout" table and the tree disagree: a row names
# a path that does not exist, or a directory that holds tracked files is
# named nowhere: neither a row of its own, nor named in backticks, relative
# to it, in the row of the nearest directory above it that has one
# (`internal/live` in the row of cmd/variantctl). testdata directories go
# with their package.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${ROOT}"

declare -A rows=()
while IFS= read -r line; do
    cell="${line#| }"
    cell="${cell%% | *}"
    text="${line#"| ${cell} | "}"
    for path in $(grep -oE '`[^`]+`' <<<"${cell}" | tr -d '`'); do
        rows["${path}"]="${text}"
    done
done < <(awk '/^## Layout$/ { on = 1; next } on && /^## / { exit } on && /^\| `/' README.md)
[ "${#rows[@]}" -gt 0 ] || die "README.md has no '## Layout' table of '| \`path\` | what |' rows"

# named DIR: whether DIR has a row or is named in its nearest ancestor's.
named() {
    local dir="$1" above rel mention
    [ -n "${rows[${dir}]+x}" ] && return 0
    above="$(dirname "${dir}")"
    while [ "${above}" != "." ] && [ -z "${rows[${above}]+x}" ]; do
        above="$(dirname "${above}")"
    done
    [ "${above}" = "." ] && return 1
    rel="${dir#"${above}/"}"
    while IFS= read -r mention; do
        mention="${mention%/}"
        case "${rel}" in
        "${mention}" | "${mention}"/*) return 0 ;;
        esac
        case "${mention}" in
        "${rel}"/*) return 0 ;;
        esac
    done < <(grep -oE '`[^`]+`' <<<"${rows[${above}]}" | tr -d '`')
    return 1
}

failed=0
for path in "${!rows[@]}"; do
    if [ ! -e "${path}" ]; then
        echo "verify-layout: README.md's Layout has a row for ${path}, which does not exist; remove or rename the row" >&2
        failed=1
    fi
done
while IFS= read -r dir; do
    if ! named "${dir}"; then
        echo "verify-layout: ${dir} holds tracked files but README.md's Layout names it nowhere; give it a row, or name it in backticks in the row of the directory above it" >&2
        failed=1
    fi
done < <(git ls-files --cached --others --exclude-standard | sed -n 's|/[^/]*$||p' | sort -u | grep -vE '(^|/)(testdata|\.[^/]*)(/|$)')

if [ "${failed}" -ne 0 ]; then
    exit 1
fi
echo "verify-layout: README.md's Layout names every directory of the tree, and every row exists"
