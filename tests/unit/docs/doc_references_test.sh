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
  mapfile -t files < <(git ls-files --cached --others --exclude-standard)
else
  mapfile -t files < <(find . -path ./build -prune -o -type f -print | sed 's|^\./||')
fi

failures=0
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  case "$f" in
    build*/*|tests/fuzz/corpus/*|*.png|*.gz|*.tar) continue ;;
    tests/unit/docs/doc_references_test.sh) continue ;;  # names the patterns it looks for
  esac
  grep -Iq . "$f" 2>/dev/null || continue  # binary or empty
  if grep -nE '(\.\./shared/|/work/shared)' "$f" >/dev/null; then
    grep -nE '(\.\./shared/|/work/shared)' "$f" | sed "s|^|$f:|; s|$| <- cites a folder outside the repository|"
    failures=$((failures + 1))
  fi
  dir=$(dirname "$f")
  while IFS= read -r ref; do
    line=${ref%%:*}
    doc=${ref#*:}
    case "$doc" in
      http*|*://*) continue ;;
    esac
    if [ -f "$dir/$doc" ] || [ -f "$doc" ] || [ -f "docs/$doc" ]; then
      continue
    fi
    echo "$f:$line: cites $doc, which is not in the repository"
    failures=$((failures + 1))
  done < <(grep -noE '[A-Za-z0-9_][A-Za-z0-9_./-]*\.md\b' "$f" | grep -vE ':(https?:)?//' || true)
done

if [ "$failures" -ne 0 ]; then
  echo "doc_references_test: $failures citation(s) of documents that are not in the repository"
  exit 1
fi
echo "doc_references_test: every cited document is in the repository (${#files[@]} files read)"
