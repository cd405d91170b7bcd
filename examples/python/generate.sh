#!/usr/bin/env bash
# Generates the Python modules of proto/sms into examples/python/gen with grpcio-tools (its own
# protoc and gRPC plugin: nothing remote). google.rpc comes from googleapis-common-protos.
#   python -m pip install -r examples/python/requirements.txt && examples/python/generate.sh [OUT]
# OUT defaults to examples/python/gen (ignored by git); PYTHON picks the interpreter.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/gen}"
python="${PYTHON:-python3}"
rm -rf "$out" && mkdir -p "$out"
cd "$here/../../proto"
"$python" -m grpc_tools.protoc -I . \
  --python_out="$out" --pyi_out="$out" --grpc_python_out="$out" \
  sms/v1/types.proto sms/v1/messaging.proto sms/v1/sender_names.proto sms/v1/inbound.proto \
  sms/v1/opt_outs.proto sms/admin/v1/admin.proto
