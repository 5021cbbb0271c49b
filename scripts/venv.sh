# Sourced: create .venv and install the project (with dev extras when asked) when pyproject.toml changed.
ensure_venv() {
  local extra="${1:-}"
  if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
  fi
  local stamp=".venv/.installed-${extra:-base}"
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/pip install -q --upgrade pip >/dev/null 2>&1 || true
    local deps
    deps=$(.venv/bin/python - "$extra" <<'PY'
import sys, tomllib
data = tomllib.load(open("pyproject.toml", "rb"))
deps = list(data["project"]["dependencies"])
if sys.argv[1]:
    deps += data["project"]["optional-dependencies"][sys.argv[1]]
print("\n".join(deps))
PY
)
    echo "$deps" > .venv/requirements.txt
    .venv/bin/pip install -q -r .venv/requirements.txt
    touch "$stamp"
  fi
}
