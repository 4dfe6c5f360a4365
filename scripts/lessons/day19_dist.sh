#!/usr/bin/env bash
# Day 19 across GPUs, in one call on a machine with two GPUs or more (the device lease is short: batch, never poll).
#   1. the graded exercise, as a student's machine checks it (`grader check day19 --exercise ring_dist`): the
#      solution, the released stub and each known-wrong ring of tests/known_wrong.yaml, with their verdicts
#      (scripts/lessons/day19_dist_check.py);
#   2. the measurement over every visible GPU, one process each (scripts/lessons/day19_ring_measure.py): causal and
#      not, plain and zigzag placement, TOKENS (default 4096 8192 32768), bf16, 16 heads of d = 128, the ring also
#      replayed from one CUDA graph per rank (--graph-ring);
#   3. the lesson's table regenerated from measured/day19/ with this run added (the README copied to $OUT).
# Everything lands in $OUT: day19-dist-check.{txt,json}, day19-dist-<gpu>x<R>.{json,md}, README.md, logs.tar.gz.
#
#   OUT=/tmp/day19 bash scripts/lessons/day19_dist.sh     # at most 7 minutes (each step has its time limit)
#
# Afterwards, in the checkout: copy $OUT/day19-dist-<gpu>x<R>.json to measured/day19/dist-<gpu>x<R>.json and run
# `python3 scripts/lessons/day19_ring_measure.py --insert`: the README's table is written from measured/ alone.
# PROFILE="8192" also profiles those token counts (rank 0: kernel tables and Chrome traces in $OUT).
# CPU=1 runs the same steps on CPU processes over gloo (a smoke run: small TOKENS, and the lesson's block printed,
# not written): CPU=1 TOKENS="32 64" OUT=/tmp/smoke bash scripts/lessons/day19_dist.sh
set -uo pipefail
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export GRADER_STATE=${GRADER_STATE:-$(mktemp -d)}  # the checks' builds and logs, kept out of the checkout
status=0
(nvidia-smi -L || true) | tee "$OUT/gpus.txt"

echo "== graded exercise (solution, stub, known-wrong rings)"
cpu=${CPU:+--cpu}
timeout 240 python3 scripts/lessons/day19_dist_check.py "$OUT" $cpu 2>&1 | tee "$OUT/day19-dist-check.txt" || status=1

echo "== measurement"
# shellcheck disable=SC2086  # TOKENS is a list
timeout 180 python3 scripts/lessons/day19_ring_measure.py "$OUT" $cpu ${cpu:---graph-ring} --tokens ${TOKENS:-4096 8192 32768} \
  ${PROFILE:+--profile $PROFILE} 2>&1 \
  | tee "$OUT/day19-dist-measure.txt" || status=1

echo "== lesson table"
if [ -n "$cpu" ]; then
  python3 scripts/lessons/day19_ring_measure.py --insert "$OUT"/day19-dist-cpux*.json --print || status=1
else
  for f in "$OUT"/day19-dist-*x[0-9]*.json; do
    [ -e "$f" ] && cp "$f" "measured/day19/${f##*/day19-}"
  done
  python3 scripts/lessons/day19_ring_measure.py --insert && cp days/day19/README.md "$OUT/README.md" || status=1
fi
tar czf "$OUT/logs.tar.gz" -C "$GRADER_STATE" logs 2>/dev/null || true
echo "exit $status; results in $OUT"
exit $status
