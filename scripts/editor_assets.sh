# Sourced (or run: `bash scripts/editor_assets.sh`, e.g. before `collectstatic` at a deploy): install the block
# editor's browser libraries from npm (package.json / package-lock.json: Trix for rich text, SortableJS for drag
# and drop, super-tiny-icons for the social block's icons), copy their built files into var/editor-assets, which
# Django serves as static/editor/ (STATICFILES_DIRS), and build the social icons' PNGs there
# (`python -m templates.social_icons`, resvg). Nothing of it is committed; runs again when the lock file or the
# icon build changed.
ensure_editor_assets() {
  local out=var/editor-assets stamp=var/editor-assets/.installed python=${PYTHON:-.venv/bin/python}
  if [ -f "$stamp" ] && [ ! package-lock.json -nt "$stamp" ] && [ ! templates/social_icons.py -nt "$stamp" ] &&
    [ -f "$out/trix.umd.min.js" ] && [ -f "$out/social/web.png" ]; then
    return 0
  fi
  command -v npm >/dev/null 2>&1 || {
    echo "npm is required for the template editor's assets (on Debian/Ubuntu: apt-get install npm)." >&2
    exit 2
  }
  echo "== installing the editor's browser libraries (npm ci)"
  mkdir -p var
  if ! npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >var/npm.log 2>&1; then
    cat var/npm.log >&2
    echo "npm ci failed (full log: var/npm.log)." >&2
    exit 2
  fi
  mkdir -p "$out"
  cp node_modules/trix/dist/trix.umd.min.js node_modules/trix/dist/trix.css \
    node_modules/sortablejs/Sortable.min.js "$out/"
  cp node_modules/trix/LICENSE "$out/trix.LICENSE" 2>/dev/null || true
  cp node_modules/sortablejs/LICENSE "$out/sortablejs.LICENSE"
  "$python" -m templates.social_icons node_modules/super-tiny-icons/images/svg "$out/social" || exit 2
  cp node_modules/super-tiny-icons/LICENSE "$out/social/super-tiny-icons.LICENSE" 2>/dev/null || true
  touch "$stamp"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then # run, not sourced
  set -euo pipefail
  cd "$(dirname "$0")/.."
  ensure_editor_assets
fi
