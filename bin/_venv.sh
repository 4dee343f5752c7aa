# Sourced by bin/pykcm and bin/test: make .venv exist and match pyproject.toml.
# Idempotent: reinstalls only when pyproject.toml (or the extras asked for) change.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
EXTRAS="${1:-}"
PY="${PYTHON:-python3}"
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "pykcm: error: Python 3.11 or newer is needed (found: $("$PY" --version 2>&1))" >&2
    exit 1
fi
if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi
STAMP="$VENV/.pykcm-installed"
WANT="$( (cat "$ROOT/pyproject.toml"; echo "extras=$EXTRAS") | sha256sum | cut -d' ' -f1)"
HAVE="$(cat "$STAMP" 2>/dev/null || true)"
if [ "$WANT" != "$HAVE" ] && ! grep -qx "$WANT" "$STAMP" 2>/dev/null; then
    echo "pykcm: installing into $VENV (first run or pyproject.toml changed) ..." >&2
    LOG="$VENV/.install.log"
    TARGET="$ROOT"
    [ -n "$EXTRAS" ] && TARGET="$ROOT[$EXTRAS]"
    if ! { "$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip &&
           "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e "$TARGET"; } \
           >"$LOG" 2>&1; then
        cat "$LOG" >&2
        echo "pykcm: error: installing dependencies failed (log above, also in $LOG)" >&2
        exit 1
    fi
    echo "$WANT" >> "$STAMP"
fi
