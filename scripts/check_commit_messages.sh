#!/usr/bin/env bash
# Runs the commit-msg hook over every commit made since the hook was added to the repository (CI's check on new
# commits; older history is left as it is). Prints each refused commit and exits 1 when there is one.
set -uo pipefail
cd "$(dirname "$0")/.."
git rev-parse --git-dir >/dev/null 2>&1 || { echo "   (not a git checkout: commit messages not checked)"; exit 0; }
since=$(git log --diff-filter=A --format=%H -- scripts/hooks/commit-msg | tail -1)
[ -n "$since" ] || { echo "   (the commit-msg hook is not committed yet: nothing to check)"; exit 0; }
msg=$(mktemp)
trap 'rm -f "$msg"' EXIT
bad=0
checked=0
for sha in $since $(git rev-list --ancestry-path "$since..HEAD"); do
  git log -1 --format=%B "$sha" >"$msg"
  checked=$((checked + 1))
  if ! out=$(scripts/hooks/commit-msg "$msg" 2>&1); then
    echo "$(git log -1 --format='%h %s' "$sha" | cut -c1-100)"
    echo "$out" | sed 's/^/    /'
    bad=1
  fi
done
[ $bad -eq 0 ] && echo "   $checked commit messages checked"
exit $bad
