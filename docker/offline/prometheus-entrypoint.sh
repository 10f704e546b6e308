#!/bin/bash
# Entrypoint of the offline Prometheus stand-in (docker/offline/Dockerfile).
#
# Prometheus reads no environment variables in its configuration, but the
# offline stack's ports are variables. With PROMETHEUS_CONFIG_TEMPLATE set, this
# writes that file to /tmp/prometheus.yml with every ${NAME} replaced by the
# variable's value (an unset one is an error; comment lines are copied as they
# are) and starts Prometheus on it.
# Without it, the arguments go to Prometheus unchanged.
set -euo pipefail

args=("$@")
if [[ -n ${PROMETHEUS_CONFIG_TEMPLATE:-} ]]; then
  out=/tmp/prometheus.yml
  : >"$out"
  while IFS= read -r line || [[ -n $line ]]; do
    while [[ ! $line =~ ^[[:space:]]*# && $line =~ \$\{([A-Za-z_][A-Za-z0-9_]*)\} ]]; do
      name="${BASH_REMATCH[1]}"
      if [[ -z ${!name+set} ]]; then
        echo "prometheus-entrypoint: $PROMETHEUS_CONFIG_TEMPLATE uses \${$name}, which is not set" >&2
        exit 2
      fi
      line="${line//"\${$name}"/${!name}}"
    done
    printf '%s\n' "$line" >>"$out"
  done <"$PROMETHEUS_CONFIG_TEMPLATE"
  args=("--config.file=$out" "$@")
fi

exec /usr/bin/prometheus "${args[@]}"
