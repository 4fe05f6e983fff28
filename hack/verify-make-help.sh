#!/usr/bin/env bash
# Fails when a make target that the README (or another Markdown file of the
# project) tells people to run is missing from `make help`: a newcomer finds
# targets through the README and `make help`, and the two must agree.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${ROOT}"

listed="$(make --no-print-directory help | awk '{ print $1 }')"
missing=0
# `make a b c` at the start of a code span or of a line (code blocks): every
# word after `make` that looks like a target name. Prose ("make sure") is not
# a command and is not matched.
while IFS=: read -r file line match; do
    for target in ${match#*make}; do
        if ! grep -qxF "${target}" <<<"${listed}"; then
            echo "verify-make-help: ${file}:${line} mentions 'make ${target}', which 'make help' does not list; add '## <description>' to its rule in the Makefile" >&2
            missing=1
        fi
    done
done < <(git ls-files '*.md' | xargs grep -noE '(^|`) *make( +[a-z][a-z0-9-]*)+' /dev/null)

if [ "${missing}" -ne 0 ]; then
    exit 1
fi
echo "verify-make-help: every make target the Markdown files mention is in 'make help'"
