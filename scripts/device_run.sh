#!/usr/bin/env bash
# Everything the GPU must verify, in one call (the device lease is short: batch, never poll).
#   1. install (carried wheels for what the image lacks, made by scripts/device_wheels.sh; then the project, no
#      downloads)
#   2. build times: cold, unchanged re-check, after editing only the kernel
#   3. the GPU test suite in parallel (solutions pass, stubs "not implemented" or fail as planted, known-wrong
#      kernels fail correctly), with its wall time
#   4. `grader check dayNN --solution` for every ready day, with timing: the evidence tables
#   5. the grader's timer against triton.testing.do_bench
#   6. the day-09 configuration sweep against cuBLAS (scripts/sgemm_sweep.py)
#   7. `grader profile` (Nsight Compute + roofline) on the solutions of PROFILE_DAYS; PNGs and reports to $OUT
#   8. compute-sanitizer memcheck over the correctness cases of SANITIZE_DAYS, every dtype (default: none)
#   9. lesson transcripts (scripts/lessons/<name>_transcripts.sh) for each name in TRANSCRIPTS, into $OUT/<name>/
#  10. lesson tables (scripts/lessons/<name>_measure.py) for each name in MEASURE, into $OUT/; TIMELINE=1: day 18's
#      profiler timeline (scripts/lessons/day18_timeline.py) into $OUT/timeline/
# Knobs for a partial run: DAYS="day06 day09" (default: every ready day), SHARDS (e.g. 4: the GPU suite split over
# 4 GPUs, below), SKIP="install build pytest checks timer
# sweep profile", PYTEST_K (a pytest -k expression), PYTEST_IDS (a file of test ids: only those), PYTEST_N,
# SWEEP_ARGS (for sgemm_sweep.py), PROFILE_DAYS,
# SANITIZE_DAYS (SANITIZE_S: seconds for each, default 400; the grader's own checks already run the sanitizers that
# course.yaml names), VARIANTS (e.g. "day20:FA20_HOPPER=0", below), TRANSCRIPTS (e.g. "day14"), MEASURE (e.g. "day18"), GRADE_DAYS (e.g. "day01 day03": `grader grade`
# of a solution, a stub and a known-wrong submission, ranked, and the leaderboard into $OUT/leaderboard),
# SEMESTER (e.g. 3: scripts/semester_demo.py, the calendar's first releases into one student repository, each
# release's new days graded with `grader grade --ranked` as GRADE_DAYS does, then the leaderboard; SEMESTER_S: its seconds),
# DEADLINE_S (start no new `grader check` after this many seconds), WATCH (e.g. "day03": scripts/watch_bench.py on that
# day; its table into $OUT, its logs into logs.tar.gz), README_FIGURES=1 (scripts/readme_figures.py on this GPU: its
# rows into $OUT/readme-figures.json; here, `scripts/readme_figures.py --merge` that file), ATTEMPTS (e.g. "day02 day05":
# the natural first attempts of tests/first_attempts.yaml against their bars, scripts/first_attempts.py), SIMULATE
# (e.g. "8.6 8.0": each day checked again as that class GPU would grade it, below; SIM_DAYS, SIMULATE_S, SIM_PREBUILD,
# SIM_PYTEST_K: GPU tests run again as each class),
# EDGE (e.g. "gemm softmax": scripts/edge_bench.py's parts, the solutions against the libraries outside the grader) and
# EDGE_DEFINES (e.g. "day05:SOFTMAX_CLUSTER=1 day11:TC_WG_CLUSTER=1": each also built with those knobs and timed on
# its day's part, for at most EDGE_DEFINE_S seconds (default 300: a knob that hangs costs no more); the tables into
# $OUT/edge.tar.gz, packed after each build, with each knob's table beside the default's (edge_bench.py --compare);
# EDGE_ARGS="--quick": one shape of each part; "--quick softmax": of that part only), EDGE_NCU (e.g.
# "bwd:dkdv_wgmma": Nsight Compute on the edge bench's kernels matching the regex, below), STAGE_ONLY=1
# (only gather the carried .stage-N/ wheel folders; see below), SUITE_PART (e.g. "0/2": one shard of the GPU suite
# on one GPU, below), GRADER_TEST_TIMINGS=1 (each GPU test's
# `grader check --timings` stamps kept in its line of test_times.jsonl), VARIANT_ARGS (more `grader check` arguments for each VARIANTS check, e.g. "--exercise
# attention_bwd_tc --correctness-only"; VARIANT_ARGS_dayNN for that day's variants only, VARIANT_S the seconds each
# check may take), TOLERANCE (e.g. "day12.flash_attention_mma": scripts/tolerance_sweep.py over
# those exercises as graded, for TOLERANCE_S seconds (default 150); the table into $OUT/tolerance-sweep.json).
# Full logs go to $OUT/logs.tar.gz, results to $OUT/results.json; a short table is printed last.
set -uo pipefail
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
LOG=${LOG:-$(mktemp -d)}  # LOG=$OUT/... keeps the logs of a run cut off by its time limit
mkdir -p "$LOG"
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."

# Wheels over one call's carry (CuTe DSL's libraries, Mojo's compiler; `scripts/device_wheels.sh --stage` makes the
# folders) come in several calls on one warm machine,
# each carrying one ignored folder .stage-N/ (wheels, and parts NAME.partNN of the larger ones, `split -b 47000000`:
# a carry of 61 MB beside the work tree was refused, 52 MB went; SHA256SUMS for the whole wheels). Every call adds its folders to /tmp/stage, which outlives a call on a warm
# machine; STAGE_ONLY=1 stops there (the calls before the last). Once every part of a wheel is there it is joined,
# checked against SHA256SUMS and installed into /tmp/site with the others.
if compgen -G ".stage-*/*" >/dev/null; then
  mkdir -p /tmp/stage && cp -r .stage-*/. /tmp/stage/
  if [ -n "${STAGE_ONLY:-}" ]; then echo "staged:"; ls -l /tmp/stage; exit 0; fi
fi
wheels=()
if compgen -G "/tmp/stage/*.whl*" >/dev/null; then
  if ( cd /tmp/stage && for first in *.part00; do [ -e "$first" ] || continue; w=${first%.part00}
         cat "$w".part?? >"$w" && rm "$w".part?? || exit 1; done
       [ ! -f SHA256SUMS ] || sha256sum -c --quiet SHA256SUMS ); then
    wheels+=(/tmp/stage/*.whl)
  else
    echo "staged wheels: a part missing or a checksum mismatch: not installed"
  fi
fi
compgen -G ".whl/*.whl" >/dev/null && wheels+=(.whl/*.whl)
# SKIP="install": the caller installed the wheels and the project and exported PYTHONPATH (runs in parallel, one
# per GPU, must not install the project over each other)
skip() { [[ " ${SKIP:-} " == *" $1 "* ]]; }
# .whl/ is ignored by git, so a call has it only when run's carry names it; without it the image lacks pydantic,
# which the grader's course model (grader/course.py) needs, and every grader command fails far from the cause
skip install || compgen -G ".whl/*.whl" >/dev/null \
  || echo "device_run.sh: no wheels in .whl/ (make them with scripts/device_wheels.sh; a device call needs carry: [\".whl\"])" >&2
skip install && wheels=()
if [ ${#wheels[@]} -gt 0 ]; then  # compiled to .pyc at install, as a student's pip does (timings)
  python3 -m pip install -q --no-index --no-deps --no-cache-dir --target /tmp/site "${wheels[@]}" \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  # --target leaves the wheels' .pth files unread (CuTe DSL's adds its dsl_packages/): read them here, once
  site_paths=$(python3 -c "import site, sys; site.addsitedir('/tmp/site')
print(':'.join(dict.fromkeys(p for p in sys.path if p.startswith('/tmp/site/'))))" 2>/dev/null)
  [ -n "$site_paths" ] && export PYTHONPATH=$site_paths:$PYTHONPATH
  # for commands run after this script in the same call (`source /tmp/site.env`): they do not inherit its exports
  echo "export PYTHONPATH=$PYTHONPATH" >/tmp/site.env
fi
skip install || python3 -m pip install -q --no-deps --no-build-isolation -e . >"$LOG/install.log" 2>&1 || cat "$LOG/install.log"
# The sandbox of `grader grade` and `check --ranked` needs bwrap: where the image lacks it, a binary carried in
# .whl/bin/ (from Debian's package: apt-get download bubblewrap && dpkg-deb -x bubblewrap_*.deb x, then x/usr/bin/bwrap)
command -v bwrap >/dev/null || { [ -x .whl/bin/bwrap ] && export PATH="$PWD/.whl/bin:$PATH"; }
python3 -m grader doctor | tee "$LOG/doctor.txt"
days=${DAYS:-$(python3 -c "from grader.course import load_course; print(' '.join(d.id for d in load_course(__import__('pathlib').Path('course.yaml')).days if d.status == 'ready'))")}
all_days=$days  # SIMULATE's default, kept when SKIP has checks

skip build || { echo "== build times"; python3 scripts/build_times.py "$LOG" 2>&1 | tee "$LOG/build_times.txt"; }
# The GPU suite in parallel: builds are keyed by content, so workers share them (PYTEST_N workers, default one per CPU core: the suite is bound by compiling).
# SUITE_PART=i/n (one GPU, i = 0 .. n-1): only shard i of the suite's n (tests/conftest.py balances them by their
# recorded seconds), for a suite longer than one call: n calls, then here `python3 scripts/gpu_suite.py --merge
# A/gpu-suite.json B/gpu-suite.json --json measured/gpu-suite.json`. The multi-GPU tests are in no part: they need a
# machine of several GPUs (SHARDS).
if [ -n "${SUITE_PART:-}" ] && [ "${SHARDS:-1}" -le 1 ]; then
  export GRADER_TEST_SHARD=$SUITE_PART GRADER_TEST_SHARD_WORKERS=${PYTEST_N:-$(nproc)}
fi
skip pytest || { echo "== GPU tests"; t0=$(date +%s); export GRADER_TEST_TIMES="$LOG/test_times.jsonl"
  export GRADER_TEST_SHARED_STATE=$(mktemp -d)  # one build state for both phases (tests/conftest.py)
  # PYTEST_IDS=FILE (a file in the work tree, one test id a line, e.g. from `scripts/gpu_suite.py --unfinished
  # A/gpu-suite.json ...`): only those tests, as the rerun of the ones a part left unfinished at PYTEST_S
  targets=(tests)
  if [ -n "${PYTEST_IDS:-}" ]; then
    [ -s "$PYTEST_IDS" ] || { echo "PYTEST_IDS=$PYTEST_IDS: no such file in the work tree, or it is empty"; exit 2; }
    mapfile -t targets < <(grep -v '^[[:space:]]*$' "$PYTEST_IDS")
  fi
  # the ids collected here (this part's, with SUITE_PART): the record names those that did not finish
  python3 -m pytest -m gpu --collect-only -q -p no:cacheprovider ${PYTEST_K:+-k "$PYTEST_K"} "${targets[@]}" 2>/dev/null \
    | grep "::" >"$LOG/collected.txt"
  python3 -m pytest -m "gpu and gpu_alone" --collect-only -q -p no:cacheprovider ${PYTEST_K:+-k "$PYTEST_K"} "${targets[@]}" \
    2>/dev/null | grep "::" >"$LOG/alone.txt"
  # Two phases of one suite: the tests that may share the GPU in parallel (slowest first, tests/conftest.py), then
  # those whose measurement needs the GPU to itself (gpu_alone), one at a time. PYTEST_S bounds both together.
  # suite TAG WORKERS: both phases, their output into $LOG/pytest_gpu$TAG.txt and $LOG/pytest_gpu_alone$TAG.txt.
  suite() {
    # --maxschedchunk 1: a worker holds the test it runs and one more, never a batch (the order of
    # tests/gpu_schedule.py, which tests/test_gpu_suite_wall.py predicts, assumes it)
    timeout ${PYTEST_S:-560} python3 -m pytest -m "gpu and not gpu_alone" -v -p no:cacheprovider -n "$2" --maxschedchunk 1 \
      ${PYTEST_K:+-k "$PYTEST_K"} "${targets[@]}" >"$LOG/pytest_gpu$1.txt" 2>&1
    local left=$(( ${PYTEST_S:-560} - ($(date +%s) - t0) ))
    [ "$left" -gt 5 ] && timeout $left python3 -m pytest -m gpu_alone -v -p no:cacheprovider ${PYTEST_K:+-k "$PYTEST_K"} \
      "${targets[@]}" >"$LOG/pytest_gpu_alone$1.txt" 2>&1
  }
  # SHARDS=n (a machine of n GPUs or more): n suites at once, suite i on GPU i alone with shard i of the one-GPU
  # tests (balanced by the recorded seconds) and nproc/n workers, and one more that sees every GPU for the tests
  # that need several (multi_gpu). The shards share the build state, so each build is still made once.
  if [ "${SHARDS:-1}" -gt 1 ]; then
    per=$(( $(nproc) / SHARDS ))
    for i in $(seq 0 $((SHARDS - 1))); do
      ( export CUDA_VISIBLE_DEVICES=$i GRADER_TEST_SHARD=$i/$SHARDS GRADER_TEST_SHARD_WORKERS=$per; suite "-$i" "$per" ) &
    done
    ( export GRADER_TEST_SHARD=multi; suite -multi 2 ) &
    wait
    cat "$LOG"/pytest_gpu-*.txt >"$LOG/pytest_gpu.txt"; cat "$LOG"/pytest_gpu_alone-*.txt >"$LOG/pytest_gpu_alone.txt" 2>/dev/null
    grep -hEv " (PASSED|SKIPPED) " "$LOG/pytest_gpu.txt" "$LOG/pytest_gpu_alone.txt" | grep -E "FAILED|ERROR| in [0-9.]+s" | tail -40
    how="$SHARDS shards of -n $per, one GPU each, and the multi-GPU tests"
  else
    suite "" "${PYTEST_N:-$(nproc)}"
    grep -Ev " (PASSED|SKIPPED) " "$LOG/pytest_gpu.txt" | tail -40; grep -Ev " (PASSED|SKIPPED) " "$LOG/pytest_gpu_alone.txt" 2>/dev/null | tail -20
    how="-n ${PYTEST_N:-$(nproc)}, then the gpu_alone tests alone${SUITE_PART:+; part $SUITE_PART of the suite}"
  fi
  wall=$(( $(date +%s) - t0 )); unset GRADER_TEST_TIMES; rm -rf "$GRADER_TEST_SHARED_STATE"; unset GRADER_TEST_SHARED_STATE
  echo "GPU suite wall time: $wall s ($how)" | tee -a "$LOG/pytest_gpu.txt"
  # a suite cut off by PYTEST_S leaves xdist workers and their grader workers behind: they would skew what follows
  pkill -9 -f "pytest -m gpu" 2>/dev/null; pkill -9 -f "grader.check.worker" 2>/dev/null; sleep 1
  summary() { grep -hE "^=+ .*(passed|failed).* in [0-9.]+s" "$@" 2>/dev/null | tr -d '=' | sed 's/^ *//; s/ *$//' | paste -sd ';'; }
  model=(); [ "${SHARDS:-1}" -le 1 ] && model=(--workers "${PYTEST_N:-$(nproc)}" --alone-ids "$LOG/alone.txt")
  python3 scripts/gpu_suite.py "$LOG/test_times.jsonl" --wall "$wall" --collected-ids "$LOG/collected.txt" "${model[@]}" --json "$OUT/gpu-suite.json" \
    --summary "$(summary "$LOG/pytest_gpu.txt" "$LOG/pytest_gpu_alone.txt")" >"$LOG/gpu_suite.txt" 2>&1; }
skip sweep || { echo "== sgemm sweep"; timeout 400 python3 scripts/sgemm_sweep.py ${SWEEP_ARGS:-} 2>&1 | tee "$LOG/sgemm_sweep.txt" | grep -v "^ptxas\|^    "; }
# One day's solution checked, its .json and .txt (with the exit code) into a folder: check_solution DAY FOLDER
# SECONDS (0: no limit) [VAR=value ...] (the check's environment). DEADLINE_S: start no new check after this many
# seconds of the script (a device call is limited to 10 min).
check_solution() {
  local d=$1 dir=$2 limit=$3; shift 3
  if [ -n "${DEADLINE_S:-}" ] && [ "$SECONDS" -ge "$DEADLINE_S" ]; then echo "== $d: skipped (DEADLINE_S)"; return; fi
  echo "== $d"; env "$@" timeout "$limit" python3 -m grader check "$d" --solution --seed 1 --json "$dir/$d.json" >"$dir/$d.txt" 2>&1
  echo "exit $?" >>"$dir/$d.txt"; tail -4 "$dir/$d.txt"
}
skip checks && days=""
for d in $days; do check_solution "$d" "$LOG" 0; done
# SIMULATE (e.g. "8.6 8.0"): every day of DAYS (SIM_DAYS, when set) checked again with another class GPU's rules on
# this one (GRADER_SIMULATE_GPU, grader/gpu_support.py: that GPU's shared-memory opt-in to the launchers, no Hopper
# paths, its steps skipped as there); the verdicts and speedups go to $OUT/results-sim-<cap>.json.
# SIM_PREBUILD=N: first N days at a time checked for correctness only, in parallel, so that the timed checks after
# them (one at a time, the GPU to itself) find their builds made: a simulated build is its own (compute_80 PTX), and
# twenty days built one after another would not fit one device call.
for s in ${SIMULATE:-}; do
  tag="sim-${s//./}"; mkdir -p "$LOG/$tag"; echo "== simulating sm_${s//./}"
  if [ -n "${SIM_PREBUILD:-}" ]; then
    t0=$SECONDS
    printf '%s\n' ${SIM_DAYS:-$all_days} | xargs -P "$SIM_PREBUILD" -I{} env GRADER_SIMULATE_GPU="$s" GRADER_SANITIZE=0 \
      timeout "${SIMULATE_S:-300}" python3 -m grader check {} --solution --seed 1 --correctness-only \
      >"$LOG/$tag/prebuild.txt" 2>&1
    echo "   built (correctness only, $SIM_PREBUILD at a time) in $((SECONDS - t0)) s"
  fi
  for d in ${SIM_DAYS:-$all_days}; do check_solution "$d" "$LOG/$tag" "${SIMULATE_S:-300}" GRADER_SIMULATE_GPU="$s"; done
  python3 scripts/summarize.py "$LOG/$tag" "$OUT/results-$tag.json" >"$LOG/$tag-table.txt" && cat "$LOG/$tag-table.txt"
  # SIM_PYTEST_K (e.g. "known_wrong and (day05 or day20)"): those GPU tests again as this class, for the known-wrong
  # kernels whose launchers choose by the device's limits; each keeps its expected verdict there
  if [ -n "${SIM_PYTEST_K:-}" ]; then
    GRADER_SIMULATE_GPU="$s" timeout "${SIM_PYTEST_S:-300}" python3 -m pytest -m "gpu and not gpu_alone" -q \
      -p no:cacheprovider -n "${PYTEST_N:-$(nproc)}" -k "$SIM_PYTEST_K" tests/gpu >"$LOG/$tag-pytest.txt" 2>&1
    echo "   as sm_${s//./}: $(tail -1 "$LOG/$tag-pytest.txt")"; grep -E "^(FAILED|ERROR)" "$LOG/$tag-pytest.txt" | head -20
  fi
done
# VARIANTS (e.g. "day20:FA20_HOPPER=0", or several macros "day05:SOFTMAX_CLUSTER=1,SOFTMAX_CLUSTER_THREADS=512"):
# the day's solution checked again with those macros defined at the top of each of its .cu files (knobs the solution
# already has: here, its mma.sync walk on a Hopper GPU); the bundle goes to $OUT/results-<day>-<NAME>_<VAL>[-...].json,
# for `scripts/update_readmes.py --block`.
for v in ${VARIANTS:-}; do
  # no "=" in the names written: the device lease returns no such file
  vd=${v%%:*}; def=${v#*:}; tag="$vd-${def//=/_}"; tag=${tag//,/-}; mkdir -p "$LOG/variant-$tag"
  src=$(python3 scripts/lessons/lesson_table.py "$vd" "$def") || continue
  # VARIANT_ARGS_dayNN (e.g. VARIANT_ARGS_day20="--exercise attention_bwd_tc --correctness-only") for that day's
  # variants, else VARIANT_ARGS; VARIANT_S bounds each check (default 400 s: a knob that hangs costs no more)
  args_var="VARIANT_ARGS_$vd"; vargs=${!args_var-${VARIANT_ARGS:-}}
  echo "== $vd with $def"; timeout "${VARIANT_S:-400}" python3 -m grader check "$vd" --dir "$src" --seed 1 $vargs \
    --json "$LOG/variant-$tag/$vd.json" >"$LOG/variant-$tag.txt" 2>&1; echo "exit $?" >>"$LOG/variant-$tag.txt"; tail -4 "$LOG/variant-$tag.txt"
  python3 scripts/summarize.py "$LOG/variant-$tag" "$OUT/results-$tag.json" >"$LOG/variant-$tag-table.txt" && cat "$LOG/variant-$tag-table.txt"
done
if [ -n "${EDGE:-}" ]; then  # issue 37's table: the default builds, then each knob beside them, in this one run
  # packed again after each build, so that a call cut off by a later one (a knob that hangs) keeps the tables before
  mkdir -p "$LOG/edge"; echo "== edge bench: $EDGE"
  timeout 400 python3 scripts/edge_bench.py "$LOG/edge" --only $EDGE ${EDGE_ARGS:-} >"$LOG/edge/default.txt" 2>&1; tail -40 "$LOG/edge/default.txt"
  tar -C "$LOG" -czf "$OUT/edge.tar.gz" edge
  for spec in ${EDGE_DEFINES:-}; do  # edge_bench times a knob on its own day's part
    tag=${spec//[=:,]/_}; echo "== edge bench with $spec"
    timeout "${EDGE_DEFINE_S:-300}" python3 scripts/edge_bench.py "$LOG/edge" --define "$spec" ${EDGE_ARGS:-} >"$LOG/edge/$tag.txt" 2>&1
    echo "exit $?" >>"$LOG/edge/$tag.txt"; tail -25 "$LOG/edge/$tag.txt"
    # the knob beside the default build, case by case (edge_bench names a knob's file -DAY-MACRO_V[-MACRO_V])
    m=${spec#*:}; m=${m//=/_}; m=${m//,/-}
    base=$(ls "$LOG"/edge/edge-bench-*.json 2>/dev/null | grep -v -- '-day[0-9]' | head -1)
    knob=$(ls "$LOG"/edge/edge-bench-*-"${spec%%:*}-$m".json 2>/dev/null | head -1)
    if [ -n "$base" ] && [ -n "$knob" ]; then
      python3 scripts/edge_bench.py --compare "$base" "$knob" | tee "$LOG/edge/$tag-vs-default.md"
    fi
    tar -C "$LOG" -czf "$OUT/edge.tar.gz" edge
  done
fi
# EDGE_NCU (e.g. "bwd:dkdv_wgmma softmax:onepass"): Nsight Compute over one --quick edge-bench run of each part,
# the kernels whose names match the regex only, at the GPU's own clocks (as do_bench sees them): speed of light,
# tensor-pipe utilisation, warp stalls, occupancy and launch statistics, to $OUT/edge-ncu-<part>-<regex>.csv, and the lines
# to read first printed (edge_bench.py --ncu-summary). EDGE_NCU_COUNT (default 1): kernels profiled after the skipped
# ones, for a library op that launches several (a regex such as "cudnn" or "nvjet|xmma" names the library's own).
for spec in ${EDGE_NCU:-}; do
  part=${spec%%:*}; rx=${spec#*:}; echo "== ncu on the edge bench's $part (kernels ~ $rx)"
  # one file per spec: two specs of one part (ours, the library's) must not overwrite each other
  tag=$part-$(printf '%s' "$rx" | tr -c 'A-Za-z0-9' '_' | cut -c1-32)
  timeout "${EDGE_NCU_S:-240}" ncu --clock-control none --kernel-name "regex:$rx" --launch-skip "${EDGE_NCU_SKIP:-3}" \
    --launch-count "${EDGE_NCU_COUNT:-1}" --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
    --section Occupancy --section LaunchStats \
    --metrics "regex:^(smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio|sm__pipe_tensor_cycles_active\.avg\.pct_of_peak_sustained_active)$" \
    --csv --page details python3 scripts/edge_bench.py "$LOG/edge-ncu-$tag" --only "$part" --quick \
    >"$OUT/edge-ncu-$tag.csv" 2>"$LOG/edge-ncu-$tag.err"; echo "exit $?"
  python3 scripts/edge_bench.py --ncu-summary "$OUT/edge-ncu-$tag.csv"
done
skip timer || { echo "== timer vs do_bench"; python3 scripts/timer_agreement.py 2>&1 | tee "$LOG/timer_agreement.txt"; }

skip profile || for d in ${PROFILE_DAYS:-day05 day08 day09}; do
  echo "== profile $d"; timeout 300 python3 -m grader profile "$d" --solution >"$LOG/profile-$d.txt" 2>&1
  echo "exit $?" >>"$LOG/profile-$d.txt"; tail -30 "$LOG/profile-$d.txt"
done
if [ -n "${TOLERANCE:-}" ]; then  # the seed sweep of the changed exercises (the solutions as graded, no ORDERS rows)
  echo "== tolerance sweep: $TOLERANCE"; t=${TOLERANCE_S:-150}
  timeout $((t + 90)) python3 scripts/tolerance_sweep.py --exercise $TOLERANCE --no-orders --budget-s "$t" \
    --out "$OUT/tolerance-sweep.json" 2>&1 | tee "$LOG/tolerance_sweep.txt" | tail -12
fi
for d in ${SANITIZE_DAYS:-}; do
  echo "== memcheck $d"; timeout "${SANITIZE_S:-400}" compute-sanitizer --tool memcheck --error-exitcode 99 python3 -m grader check "$d" \
    --solution --correctness-only --timeout 300 >"$LOG/memcheck-$d.txt" 2>&1
  echo "exit $?" >>"$LOG/memcheck-$d.txt"; grep -E "ERROR SUMMARY|exit|passed|failed" "$LOG/memcheck-$d.txt" | tail -5
done
for m in ${MEASURE:-}; do  # scripts/lessons/<name>_measure.py OUT: a lesson's own measured table (e.g. "day18")
  # wheels only that table needs (.whl/<name>/, e.g. thunder's) are installed for its run alone
  extra=""; if compgen -G ".whl/$m/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-cache-dir --target "/tmp/whl-$m" ".whl/$m/"*.whl && extra="/tmp/whl-$m"; fi
  echo "== measure $m"; PYTHONPATH="${extra:+$extra:}${PYTHONPATH:-}" timeout 300 python3 "scripts/lessons/${m}_measure.py" "$OUT" \
    >"$LOG/measure-$m.txt" 2>&1
  echo "exit $?" >>"$LOG/measure-$m.txt"; tail -25 "$LOG/measure-$m.txt"
done
if [ -n "${TIMELINE:-}" ]; then  # TIMELINE=1: day 18's profiler timeline (and nsys, where present) into $OUT/timeline/
  echo "== timeline day18"; timeout 480 python3 scripts/lessons/day18_timeline.py "$OUT/timeline" >"$LOG/timeline.txt" 2>&1
  echo "exit $?" >>"$LOG/timeline.txt"; tail -30 "$LOG/timeline.txt"
fi
if [ -n "${GRADE_DAYS:-}" ]; then  # a small class graded with `grader grade` (local executor), ranked, then the leaderboard
  echo "== grade $GRADE_DAYS"; G=$(mktemp -d); python3 scripts/grade_demo.py "$G/subs" $GRADE_DAYS
  export GRADER_RANKED_SEED=${GRADER_RANKED_SEED:-$(python3 -c "import secrets; print(secrets.token_hex(16))")}
  timeout 500 python3 -m grader grade "$G/subs" --days $GRADE_DAYS --out "$G/results" --ranked 2>&1 | tee "$LOG/grade.txt" | tail -20
  python3 -m grader leaderboard build "$G/results" --out "$OUT/leaderboard" 2>&1 | tee "$LOG/leaderboard.txt" | tail -8
  tar -C "$G" -czf "$OUT/grade-results.tar.gz" results
fi
if [ -n "${SEMESTER:-}" ]; then  # the calendar's first SEMESTER releases into one student repository, each graded
  echo "== semester: first $SEMESTER releases"; S=$(mktemp -d)
  export GRADER_RANKED_SEED=${GRADER_RANKED_SEED:-$(python3 -c "import secrets; print(secrets.token_hex(16))")}
  timeout ${SEMESTER_S:-560} python3 scripts/semester_demo.py "$S/w" --releases "$SEMESTER" 2>&1 | tee "$LOG/semester.txt" | tail -30
  cp "$S/w/semester.log" "$LOG/" 2>/dev/null; tar -C "$S/w" -czf "$OUT/semester.tar.gz" results leaderboard semester.log 2>/dev/null
fi
for t in ${TRANSCRIPTS:-}; do
  echo "== transcripts $t"; timeout 400 bash "scripts/lessons/${t}_transcripts.sh" "$OUT" >"$LOG/transcripts-$t.txt" 2>&1
  echo "exit $?" >>"$LOG/transcripts-$t.txt"; tail -15 "$LOG/transcripts-$t.txt"
done
for w in ${WATCH:-}; do  # the student's loop: cold check, unchanged re-check, edit -> verdict under `grader watch`
  echo "== watch $w"; timeout 300 python3 scripts/watch_bench.py --day "$w" --out "$LOG/watch-$w" 2>&1 | tail -12
  cp "$LOG/watch-$w/watch_bench.json" "$OUT/watch-$w.json" 2>/dev/null
done
if [ -n "${ATTEMPTS:-}" ]; then  # each first attempt passes (or fails) its step's bar as its entry expects
  echo "== first attempts $ATTEMPTS"; timeout 400 python3 scripts/first_attempts.py --day $ATTEMPTS \
    --json "$OUT/first-attempts.json" 2>&1 | tee "$LOG/first_attempts.txt" | tail -12
fi
if [ -n "${README_FIGURES:-}" ]; then  # the README's times on this GPU machine
  wj=$(ls "$OUT"/watch-day03.json 2>/dev/null)  # WATCH=day03 in the same call adds the student's loop
  echo "== readme figures"; timeout 300 python3 scripts/readme_figures.py ${wj:+--watch "$wj"} 2>&1 | tee "$LOG/readme_figures.txt" | tail -12
  cp measured/readme-figures.json "$OUT/readme-figures.json" 2>/dev/null
fi
if [ -d .grader/profile ]; then  # only when something was profiled
  mkdir -p "$OUT/profile" && cp .grader/profile/*.png "$OUT/profile/" 2>/dev/null
  tar -C .grader/profile -czf "$OUT/profile/profile-json.tar.gz" $(cd .grader/profile && ls *.json 2>/dev/null)
  cp .grader/cache/ceilings-*.json "$OUT/profile/" 2>/dev/null
fi

python3 scripts/summarize.py "$LOG" "$OUT/results.json" | tee "$LOG/table.txt"
tar -C "$LOG" -czf "$OUT/logs.tar.gz" .
cp "$LOG/table.txt" "$OUT/table.txt"
[ -f "$LOG/gpu_suite.txt" ] && cat "$LOG/gpu_suite.txt"  # the suite's count, wall time and slowest tests, last
