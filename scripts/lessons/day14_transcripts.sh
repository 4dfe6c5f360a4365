#!/usr/bin/env bash
# Day 14's lesson transcripts, made on a GPU machine (never typed): each tool on a real failure from the day's
# stubs, a cuda-gdb session, a GPU core dump, ptxas's report and the SASS of the spill exercise, and what each
# tool costs in run time. Writes OUT/day14/*.txt; scripts/insert_transcripts.py puts them into the lesson.
#   bash scripts/lessons/day14_transcripts.sh OUT
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:?usage: day14_transcripts.sh OUT}/day14
mkdir -p "$OUT"
WORK=$(mktemp -d)
cd "$ROOT"
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
note() { echo "# $1 ($GPU, $(nvcc --version | grep -o 'release [0-9.]*'), $(compute-sanitizer --version | grep -o 'Version [0-9.]*'))"; }
# The path of the machine that made them would only distract: show the repository's paths.
clean() { sed -e "s#$ROOT/##g" -e "s#$WORK/##g"; }

# 1. grader sanitize on each buggy stub, its tool named; then the solutions, every required tool; then an earlier day.
for pair in race:racecheck oob:memcheck uninit:initcheck sync:synccheck; do
  ex=${pair%%:*}; tool=${pair##*:}
  { note "grader sanitize day14 --exercise $ex --tool $tool"
    COLUMNS=120 python3 -m grader sanitize day14 --exercise "$ex" --tool "$tool" --seed 1 2>&1
    echo "(exit code $?)"; } | clean > "$OUT/sanitize-$ex.txt"
  # The tool's own report, as the grader saved it (the first error in full).
  log=.grader/logs/day14-$ex-student-sanitize.$tool.log  # days/ is the "student" variant
  { note "compute-sanitizer --tool $tool, its report (from $log)"
    sed -n '/^== report/,$p' "$log" | sed -n '2,16p'; } | clean > "$OUT/report-$ex.txt"
done
{ note "grader sanitize day14 --solution"; COLUMNS=120 python3 -m grader sanitize day14 --solution --seed 1 2>&1; echo "(exit code $?)"; } \
  | clean > "$OUT/sanitize-solution.txt"
{ note "grader sanitize day04 --solution"; COLUMNS=120 python3 -m grader sanitize day04 --solution --seed 1 2>&1; echo "(exit code $?)"; } \
  | clean > "$OUT/sanitize-day04.txt"

# 2. What each tool costs: the driver on the race solution, 1000 x 4096, plain and under each tool.
nvcc -O3 -lineinfo -std=c++17 -Icommon -o "$WORK/race_fast" days/day14/driver.cu solutions/day14/race.cu
{ note "seconds for ./race_fast 1000 4096 (one softmax call, process start to exit)"
  printf "%-12s %8s\n" tool seconds
  for tool in none memcheck racecheck initcheck synccheck; do
    start=$(date +%s%N)
    if [ "$tool" = none ]; then "$WORK/race_fast" 1000 4096 >/dev/null
    else compute-sanitizer --tool "$tool" "$WORK/race_fast" 1000 4096 >/dev/null 2>&1; fi
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    printf "%-12s %5d.%02d\n" "$tool" $((ms / 1000)) $(( (ms % 1000) / 10 ))
  done; } > "$OUT/tool-cost.txt"

# 3. cuda-gdb on the race stub, built with -G: stop where the block reads the warps' partial results, look at one
# thread of one block and at the shared array. The source line also maps to host code (the launcher's inlined
# template), so the session first stops at the kernel's launch (break_on_launch): from there the line's breakpoint
# is met in device code, by every thread of every block.
nvcc -G -g -std=c++17 -Icommon -o "$WORK/race_debug" days/day14/driver.cu days/day14/race.cu
LINE=$(grep -n "v = partial\[0\];" days/day14/race.cu | cut -d: -f1)
{ note "cuda-gdb -batch ... ./race_debug 64 1000"
  (cd "$WORK" && timeout 300 cuda-gdb -q -batch \
    -ex "set cuda break_on_launch application" -ex "run 64 1000" -ex "set cuda break_on_launch none" \
    -ex "break race.cu:$LINE" -ex "continue" -ex "info cuda kernels" \
    -ex "cuda block (3,0,0) thread (70,0,0)" -ex "print warp" -ex "print v" -ex "print partial[0]@8" \
    -ex "next" -ex "print v" -ex "delete" -ex "continue" ./race_debug 2>&1) \
    | grep -v -E "^\[(New|Thread|Detaching)|libthread_db|^Using host" ; } | clean > "$OUT/cuda-gdb.txt"
# A transcript that never reached the kernel must not reach the lesson.
grep -q "No symbol \"partial\"" "$OUT/cuda-gdb.txt" && echo "cuda-gdb did not stop inside the kernel: see $OUT/cuda-gdb.txt" >&2 \
  && mv "$OUT/cuda-gdb.txt" "$OUT/cuda-gdb.failed.txt"

# 4. A GPU core dump: the oob stub given rows 4096 times longer than they are; then the dump opened in cuda-gdb.
nvcc -G -g -std=c++17 -Icommon -o "$WORK/oob_debug" days/day14/driver.cu days/day14/oob.cu
{ note "CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 ./oob_debug 64 1000 --wrong-cols 4096; then target cudacore"
  (cd "$WORK" && CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_COREDUMP_FILE="$WORK/oob.cudacore" timeout 300 \
     ./oob_debug 64 1000 --wrong-cols 4096 2>&1; echo "(exit code $?)"; ls -la oob.cudacore 2>&1 | awk '{print $5, $9}')
  echo "---- cuda-gdb"
  (cd "$WORK" && timeout 300 cuda-gdb -q -batch -ex "target cudacore oob.cudacore" -ex "info cuda kernels" \
     -ex "bt" -ex "print row" -ex "print lane" -ex "print k" -ex "print cols" ./oob_debug 2>&1) ; } \
  | clean > "$OUT/coredump.txt"

# 5. The spill exercise: ptxas's report and the local loads/stores in the SASS, stub against solution; and time.
for which in days solutions; do
  shown="$which/day14/spill.cu"  # the lesson names the solution's file, which a student has once it is published
  [ "$which" = solutions ] && shown="$shown, yours once day14 is published"
  { note "nvcc -Xptxas -v, $shown (sm_90)"
    nvcc -c -O3 -std=c++17 -Icommon -arch=sm_90 -Xptxas -v -o "$WORK/spill-$which.o" "$which/day14/spill.cu" 2>&1 \
      | grep -A2 "softmax_cached_kernel.*float" | grep -v "^--" | head -4
    echo "local loads/stores in the SASS (cuobjdump -sass | grep LDL/STL): $(cuobjdump -sass "$WORK/spill-$which.o" \
      | grep -c -E '\b(LDL|STL)')"
    nvcc -O3 -std=c++17 -Icommon -o "$WORK/spill-$which" days/day14/driver.cu "$which/day14/spill.cu"
    "$WORK/spill-$which" 65536 1024 --reps 50; } | clean > "$OUT/spill-$which.txt"
done
rm -rf "$WORK"
ls -la "$OUT"
# One archive: the device tool brings back only a few files per run.
tar -C "$(dirname "$OUT")" -czf "$OUT.tar.gz" day14 && rm -rf "$OUT"
