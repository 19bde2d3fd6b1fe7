#!/usr/bin/env bash
# Coverage-guided fuzzing (atheris/libFuzzer) of what reads a peer's bytes: unpack_frames,
# FrameReader and loads with a safe and a forwarding Decoder (tests/fuzz_target.py), against
# the compiled build instrumented for libFuzzer with clang (-fsanitize=fuzzer-no-link and
# UBSan), so the fuzzer sees coverage of the compiled C code, not only of the interpreted
# modules. Needs clang (Debian: apt-get install clang); not part of the test command.
#   bash scripts/fuzz.sh [SECONDS]   (default 300)
# Inputs that add coverage are merged into the committed corpus, tests/fuzz/corpus, which
# tests/test_fuzz_corpus.py replays in every CI run; crashes are written to .envs/fuzz-out.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-300}
python=${PYTHON:-python3}
clang=${CLANG:-$(command -v clang || command -v clang-14)}
env="$repo/.envs/fuzz"
out="$repo/.envs/fuzz-out"
corpus="$repo/tests/fuzz/corpus"

echo "== building the instrumented compiled fastser into $env"
"$python" -m venv --clear "$env"
# shift-base is left out: mypyc tags ints by shifting them left, negative ones too (defined by
# every compiler mypyc supports, undefined by the C standard), and UBSan reports each site.
CC="$clang" LDSHARED="$clang -shared" CFLAGS="-fsanitize=fuzzer-no-link,undefined -fno-sanitize=shift-base" \
    FASTSER_PURE=0 "$env/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir \
    "$repo[fuzz]"
# The sanitizer coverage hooks live in atheris's runtime; the compiled modules find them only
# when it is loaded into the global namespace first.
runtime=$("$env/bin/python" -c "import atheris; print(atheris.path())")/ubsan_with_fuzzer.so
# libFuzzer starts its merge workers as argv[0]: the script itself, run by the venv's python3.
export PATH="$env/bin:$PATH"
run() { LD_PRELOAD="$runtime" "$@"; }

rm -rf "$out" && mkdir -p "$out/new" "$out/seeds"
main="$repo/tests/fuzz_main.py"
cd "$out"  # not the repository root, where "import fastser" would find the sources
run "$main" --seeds "$out/seeds"
echo "== fuzzing for $seconds s"
run python3 -c "import fastser; assert fastser.COMPILED"
run "$main" -max_total_time="$seconds" \
    -timeout=10 -rss_limit_mb=2048 -max_len=8192 -artifact_prefix="$out/" \
    "$out/new" "$corpus" "$out/seeds"
echo "== merging what adds coverage into $corpus"
run "$main" -merge=1 "$corpus" "$out/new" "$out/seeds"
ls "$corpus" | wc -l
