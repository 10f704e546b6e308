#!/usr/bin/env bash
# Draws server/'s two diagrams with Graphviz's dot (Debian package graphviz):
#   layers.dot / layers.svg        the module layers, generated from server/LAYERS
#                                  and the real #include lines (tests/check_layers.py --dot)
#   pool-states.svg                the pool's connection states, from pool-states.dot
#   ws-states.svg                  a WebSocket connection's states, from ws-states.dot
#
#   server/diagrams/render.sh           rewrite layers.dot and both SVGs
#   server/diagrams/render.sh --check   fail if the committed files are not what it would write
#                                       (layers.svg: only if its modules or floors differ)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

render() { # into directory $1
  python3 "$repo/tests/check_layers.py" --root "$repo/server" --dot >"$1/layers.dot"
  dot -Tsvg "$1/layers.dot" -o "$1/layers.svg"
  dot -Tsvg "$here/pool-states.dot" -o "$1/pool-states.svg"
  dot -Tsvg "$here/ws-states.dot" -o "$1/ws-states.svg"
}

if [[ "${1:-}" == "--check" ]]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  render "$tmp"
  status=0
  # layers.dot is the include graph itself, so it must be exact; layers.svg must draw
  # the same modules on the same floors, but an #include that adds an arrow needs no
  # redraw of it (its <title>s name the floors and modules, in order; arrows are "a->b").
  titles() { grep -o '<title>[^<]*</title>' "$1" | grep -v -- '&gt;' || true; }
  for f in layers.dot pool-states.svg ws-states.svg; do
    if ! cmp -s "$tmp/$f" "$here/$f"; then
      echo "render.sh: server/diagrams/$f is not current; run server/diagrams/render.sh" >&2
      status=1
    fi
  done
  if [[ "$(titles "$tmp/layers.svg")" != "$(titles "$here/layers.svg")" ]]; then
    echo "render.sh: server/diagrams/layers.svg does not draw server/LAYERS' modules; run" \
      "server/diagrams/render.sh" >&2
    status=1
  fi
  [[ $status == 0 ]] && echo "render.sh: the diagrams are current"
  exit $status
fi
render "$here"
echo "render.sh: wrote layers.dot, layers.svg, pool-states.svg, ws-states.svg in server/diagrams"
