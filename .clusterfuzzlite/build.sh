#!/bin/bash -eu
# Builds every libFuzzer target of fuzz/ into $OUT as ClusterFuzzLite expects: $OUT/<target>,
# $OUT/<target>.dict and $OUT/<target>_seed_corpus.zip (checked-in seeds and regressions).
#
# Two environments run this same script:
# - gcr.io/oss-fuzz-base/base-builder-rust (ClusterFuzzLite): nightly cargo, and the image's
#   `compile` presets RUSTFLAGS (`--cfg fuzzing -Zsanitizer=address ...`, or
#   `-Cinstrument-coverage` when SANITIZER=coverage) and CUSTOM_LIBFUZZER_PATH, which
#   libfuzzer-sys links instead of compiling its own libFuzzer.
# - a stable toolchain with only SRC and OUT set (`cargo xtask fuzz`, the `cargo xtask ci`
#   smoke; they also set CARGO_TARGET_DIR and may set NORMFUZZ_FUZZ_FEATURES).
#
# Why a plain `cargo build` and not the conventional `cargo fuzz build -O`: fuzz/ is an ordinary
# workspace member whose binaries need the `libfuzzer` feature (so `cargo test --workspace`
# never compiles libFuzzer). cargo-fuzz only adds the sanitizer-coverage flags, `--cfg fuzzing`
# and `--target` below to the preset RUSTFLAGS, but it wants a manifest marked
# `[package.metadata] cargo-fuzz = true`, and the image's cargo wrapper turns `cargo fuzz build`
# into a bare `cargo build --bins` for coverage builds, which would skip feature-gated binaries.
# Appending the same flags ourselves gives cargo-fuzz's build in the image and works on stable.

# ClusterFuzzLite runs `bash -eux build.sh`; be as strict when started any other way.
set -euo pipefail
cd "$SRC/normfuzz"

triple=x86_64-unknown-linux-gnu
if [ "${SANITIZER:-}" = coverage ]; then
  # Source-based coverage comes from the image's RUSTFLAGS; libFuzzer only replays the corpus,
  # so no sanitizer-coverage. Like the image's own `cargo fuzz` coverage path, build unoptimized
  # (optimized builds gave malformed profile data there).
  profile=dev
  profile_dir=debug
else
  # NORMFUZZ_FUZZ_PROFILE: the CI smoke builds with the workspace's cheaper `ci` profile.
  profile=${NORMFUZZ_FUZZ_PROFILE:-release}
  profile_dir=$profile
  # Keep in step with cargo-fuzz's defaults (sancov level 4 with 8-bit counters, PC table and
  # comparison tracing); assertions and overflow checks on, since a fuzz finding is any panic.
  export RUSTFLAGS="${RUSTFLAGS:-} --cfg fuzzing -Cpasses=sancov-module \
-Cllvm-args=-sanitizer-coverage-level=4 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table -Cllvm-args=-sanitizer-coverage-trace-compares \
-Cdebug-assertions -Coverflow-checks"
fi
# cargo prefers CARGO_ENCODED_RUSTFLAGS over RUSTFLAGS; a parent cargo may have set it.
unset CARGO_ENCODED_RUSTFLAGS
target_dir="${CARGO_TARGET_DIR:-$PWD/target}"

# The explicit --target keeps RUSTFLAGS (sanitizers, coverage) off build scripts and proc macros.
"${CARGO:-cargo}" build --locked --profile "$profile" --target "$triple" \
  --target-dir "$target_dir" -p normfuzz-fuzz --bins \
  --features "libfuzzer ${NORMFUZZ_FUZZ_FEATURES:-}"

# The targets: the `name` of each [[bin]] table of fuzz/Cargo.toml, the one list of them.
mapfile -t targets < <(awk '/^\[/ { bin = ($0 == "[[bin]]") }
  bin && /^name *=/ { sub(/^name *= *"/, ""); sub(/".*$/, ""); print }' fuzz/Cargo.toml)
if [ "${#targets[@]}" -eq 0 ]; then
  echo "build.sh: no [[bin]] target in fuzz/Cargo.toml" >&2
  exit 1
fi
for target in "${targets[@]}"; do
  cp "$target_dir/$triple/$profile_dir/$target" "$OUT/$target"
  cp "fuzz/dicts/$target.dict" "$OUT/$target.dict"
done

# Seed corpora: every visible file of corpus/fuzz/<target>/ and corpus/regressions/fuzz/<target>/
# (python3 is in the base image and here; `zip` is not everywhere).
python3 - "$OUT" "${targets[@]}" <<'PY'
import os
import sys
import zipfile

out, targets = sys.argv[1], sys.argv[2:]
for target in targets:
    tmp = os.path.join(out, f".{target}_seed_corpus.zip.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
        for folder, prefix in ((f"corpus/fuzz/{target}", ""),
                               (f"corpus/regressions/fuzz/{target}", "regression-")):
            if not os.path.isdir(folder):
                continue
            for name in sorted(os.listdir(folder)):
                path = os.path.join(folder, name)
                if os.path.isfile(path) and not name.startswith("."):
                    archive.write(path, prefix + name)
    os.replace(tmp, os.path.join(out, f"{target}_seed_corpus.zip"))
PY
echo "build.sh: ${#targets[@]} targets in $OUT: ${targets[*]}"
