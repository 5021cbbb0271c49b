# Sourced: install the block editor's browser libraries from npm (package.json / package-lock.json: Trix for rich
# text, SortableJS for drag and drop) and copy their built files into var/editor-assets, which Django serves as
# static/editor/ (STATICFILES_DIRS). Nothing of it is committed; runs again when the lock file changed.
ensure_editor_assets() {
  local out=var/editor-assets stamp=var/editor-assets/.installed
  if [ -f "$stamp" ] && [ ! package-lock.json -nt "$stamp" ] && [ -f "$out/trix.umd.min.js" ]; then
    return 0
  fi
  command -v npm >/dev/null 2>&1 || {
    echo "npm is required for the template editor's assets (on Debian/Ubuntu: apt-get install npm)." >&2
    exit 2
  }
  echo "== installing the editor's browser libraries (npm ci)"
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
  touch "$stamp"
}
