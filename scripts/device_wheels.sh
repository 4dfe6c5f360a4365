#!/usr/bin/env bash
# What a device call carries that the device image lacks and cannot download (it has no network), made here in
# git-ignored folders. A new checkout has none of them: run this before the session's first device call.
#   bash scripts/device_wheels.sh           .whl/: the project's own needs (pydantic and its parts, watchfiles, a
#                                           newer typing-extensions) as Python 3.12 x86-64 wheels, and Debian's bwrap
#                                           in .whl/bin/ (the sandbox of `grader grade`); carry [".whl"]
#   bash scripts/device_wheels.sh --stage   .stage-1 .. .stage-N: the CuTe DSL and Mojo routes (days 11 and 13), about
#                                           330 MB, in parts that fit one call's carry beside the work tree; carried one
#                                           folder a call with STAGE_ONLY=1 (scripts/device_run.sh says how)
# Versions: the ones installed here (pip show), so the device runs what CI compiled.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=(--only-binary=:all: --no-deps --python-version 3.12 --implementation cp --platform manylinux_2_34_x86_64
    --platform manylinux_2_28_x86_64
    --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
installed() {  # NAME==VERSION of each installed package named; fails on one not installed here
  for n in "$@"; do
    v=$(python3 -m pip show "$n" 2>/dev/null | sed -n 's/^Version: //p')
    [ -n "$v" ] || { echo "$n is not installed here: pip install -e '.[test,cute,mojo]' first" >&2; exit 1; }
    echo "$n==$v"
  done
}

if [ "${1:-}" != "--stage" ]; then
  mkdir -p .whl/bin
  mapfile -t want < <(installed pydantic pydantic-core annotated-types typing-inspection typing-extensions watchfiles)
  python3 -m pip download -q "${PY[@]}" -d .whl "${want[@]}"
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download -q bubblewrap >/dev/null 2>&1 && dpkg-deb -x bubblewrap_*.deb x)
  cp "$tmp/x/usr/bin/bwrap" .whl/bin/ && rm -rf "$tmp"
  ls -l .whl .whl/bin
  exit 0
fi

# --stage: every wheel whole into a scratch folder, checksummed; those over PART bytes split into NAME.part00, ...;
# the files then dealt into .stage-N folders of at most PART bytes each (a carry of 52 MB beside the work tree went,
# one of 61 MB was refused).
PART=47000000
mapfile -t want < <(installed nvidia-cutlass-dsl nvidia-cutlass-dsl-libs-base nvidia-cutlass-dsl-libs-core \
  nvidia-cutlass-dsl-libs-cu12 mojo-compiler mojo-compiler-mojo-libs max-core max-mojo-libs max-shmem-libs)
scratch=$(mktemp -d)
python3 -m pip download -q "${PY[@]}" -d "$scratch" "${want[@]}"
(cd "$scratch" && sha256sum -- *.whl >SHA256SUMS
 for w in *.whl; do
   if [ "$(stat -c %s "$w")" -gt "$PART" ]; then split -b "$PART" -d -a 2 "$w" "$w.part" && rm "$w"; fi
 done)
rm -rf .stage-*
used=()  # bytes in .stage-1, .stage-2, ...: each file, largest first, into the first folder it fits (first-fit)
for f in $(cd "$scratch" && ls -S); do
  size=$(stat -c %s "$scratch/$f"); i=0
  while [ "$i" -lt "${#used[@]}" ] && [ $((used[i] + size)) -gt "$PART" ]; do i=$((i + 1)); done
  [ "$i" -lt "${#used[@]}" ] || used+=(0)
  mkdir -p ".stage-$((i + 1))" && mv "$scratch/$f" ".stage-$((i + 1))/"; used[i]=$((used[i] + size))
done
rm -rf "$scratch"
du -sh .stage-*
echo "carry each with STAGE_ONLY=1 bash scripts/device_run.sh (carry [\".stage-N\"]), one call each on one warm machine;"
echo "the last call carries its own .stage-N with the work: every part must be in /tmp/stage before the install"
