# Sourced: create .venv and install the project's dependencies (plus an extra such as `dev` when asked) when
# pyproject.toml changed since the last install. Needs Python >= 3.11 (set PYTHON to choose the interpreter).
find_python() {
  local candidate
  for candidate in "${PYTHON:-}" python3.13 python3.12 python3.11 python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

ensure_venv() {
  local extra="${1:-}"
  if [ ! -x .venv/bin/python ]; then
    local py
    py=$(find_python) || {
      echo "Python 3.11 or newer is required (set PYTHON=/path/to/python3.11)." >&2
      exit 2
    }
    echo "== creating .venv with $py"
    "$py" -m venv .venv || {
      echo "Could not create .venv (on Debian/Ubuntu: apt-get install python3-venv)." >&2
      exit 2
    }
  fi
  local stamp=".venv/.installed-${extra:-base}"
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    echo "== installing dependencies${extra:+ (with $extra extras)} into .venv"
    .venv/bin/python - "$extra" > .venv/requirements.txt <<'PY'
import sys, tomllib
data = tomllib.load(open("pyproject.toml", "rb"))
deps = list(data["project"]["dependencies"])
if sys.argv[1]:
    deps += data["project"]["optional-dependencies"][sys.argv[1]]
print("\n".join(deps))
PY
    if ! .venv/bin/python -m pip install -q --disable-pip-version-check -r .venv/requirements.txt \
      > .venv/pip.log 2>&1; then
      cat .venv/pip.log >&2
      echo "Installing the dependencies failed (full log: .venv/pip.log)." >&2
      exit 2
    fi
    touch "$stamp"
  fi
}
