#!/usr/bin/env bash
# Every document the project's files cite must be in the repository (ctest, label unit).
# A source comment, script, manifest or doc that names `something.md` must resolve to a file
# of this checkout: relative to the citing file, to the repository root, or under docs/.
# Material outside the repository (a shared folder, a path on the author's machine) may not
# be cited at all: a clone must be self-contained.
# Usage: doc_references_test.sh <repository root>
set -euo pipefail
root=$(cd "${1:?repository root}" && pwd)
cd "$root"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  list() { git ls-files -z --cached --others --exclude-standard; }
else
  list() { find . -path ./build -prune -o -type f -print0 | sed -z 's|^\./||'; }
fi
# Text files only (grep -I), minus build output, fuzz inputs and this script (it names the
# patterns it looks for).
files() {
  list | grep -zvE '^(build[^/]*/|tests/fuzz/corpus/|tests/unit/docs/doc_references_test\.sh$)'
}

failures=0
# One grep over all files for each pattern: citations of folders outside the repository...
while IFS= read -r hit; do
  echo "$hit <- cites a folder outside the repository"
  failures=$((failures + 1))
done < <(files | xargs -0 grep -InE '(\.\./shared/|/work/shared)' 2>/dev/null || true)

# ...and every `name.md` (file:line:doc), resolved against the citing file's folder, the root
# and docs/.
while IFS= read -r hit; do
  file=${hit%%:*}
  rest=${hit#*:}
  line=${rest%%:*}
  doc=${rest#*:}
  dir=$(dirname "$file")
  if [ -f "$dir/$doc" ] || [ -f "$doc" ] || [ -f "docs/$doc" ]; then
    continue
  fi
  echo "$file:$line: cites $doc, which is not in the repository"
  failures=$((failures + 1))
done < <(files | xargs -0 grep -InoE '[A-Za-z0-9_][A-Za-z0-9_./-]*\.md\b' 2>/dev/null | sort -u || true)

if [ "$failures" -ne 0 ]; then
  echo "doc_references_test: $failures citation(s) of documents that are not in the repository"
  exit 1
fi
echo "doc_references_test: every cited document is in the repository"
