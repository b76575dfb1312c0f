#!/usr/bin/env bash
# The one short GPU check of issue 4 ("With a GPU"), about 5 minutes on one H100/H200/MI300X:
#  1. measure a cost table for a few bundled models' layers on this GPU (hardware/measured/<profile>.json,
#     resumable: rerunning measures only what is missing);
#  2. time a real torch training step of reduced dense models (4 layers, TP=PP=1) and print, per model,
#     one JSON line with the measured step, the sum of measured kernels, and measure.projection.project.project's
#     step time with the table and with the roofline only (projection_error_pct, roofline_error_pct).
# Usage: bench/gpu_check.sh [PROFILE]      PROFILE defaults from the GPU name (h100-sxm-80gb, h200-sxm-141gb, ...)
# Env: PYTHON (interpreter with torch+CUDA/ROCm, pydantic, click, pyyaml), SEQ (default 4096), REPS (default 10).
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  for candidate in .venv/bin/python python3 python; do
    if command -v "$candidate" >/dev/null && "$candidate" -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
      PY="$candidate"; break
    fi
  done
fi
if [ -z "$PY" ]; then
  echo "gpu_check: no python with a CUDA/ROCm torch found; set PYTHON=/path/to/python" >&2
  exit 1
fi
SEQ="${SEQ:-4096}"
REPS="${REPS:-10}"

PROFILE_BY_NAME='
import torch
name = torch.cuda.get_device_name(0).lower()
pairs = (("h200", "h200-sxm-141gb"), ("h800", "h800-sxm-80gb"), ("h100", "h100-sxm-80gb"), ("a100", "a100-sxm-80gb"),
         ("gb300", "gb300-nvl72"), ("gb200", "gb200-nvl72"), ("b300", "b300"), ("b200", "b200"),
         ("mi355", "mi355x"), ("mi325", "mi325x"), ("mi300", "mi300x"))
print(next((profile for needle, profile in pairs if needle in name), "h100-sxm-80gb"))
'
if [ $# -ge 1 ]; then PROFILE="$1"; else PROFILE="$("$PY" -c "$PROFILE_BY_NAME")"; fi
TABLE="hardware/measured/${PROFILE}.json"
mkdir -p hardware/measured
echo "gpu_check: $("$PY" -c 'import torch; print(torch.cuda.get_device_name(0), "torch", torch.__version__)') -> profile $PROFILE, table $TABLE" >&2

measure() { "$PY" -m shardplan.cli.measure --device cuda --hardware "$PROFILE" --out "$TABLE" --reps "$REPS" --budget-s 1 "$@"; }
# 1. layers of a few bundled models at the slicings their published recipes use
measure --model Llama-3.1-8B --seq-length "$SEQ" --tp 1,2,4,8
measure --model Qwen3-8B --seq-length "$SEQ" --tp 1,2
measure --model Llama-3.1-70B --seq-length "$SEQ" --tp 4,8
measure --model Qwen3-30B-A3B --seq-length "$SEQ" --tp 1 --ep 4,8
measure --model Mixtral-8x7B-v0.1 --seq-length "$SEQ" --tp 2 --ep 8

# 2. a real training step of reduced models vs the projection of the same recipe
for model in Llama-3.1-8B Qwen3-8B; do
  "$PY" bench/gpu_step.py --model "$model" --layers 4 --seq-length "$SEQ" --device cuda \
      --hardware "$PROFILE" --table "$TABLE" --steps 10
done
