#!/usr/bin/env bash
# The Action's first step: puts `normfuzz` on PATH. A release binary for the runner when there is
# one, its SHA-256 checked against the release's `.sha256` file (a mismatch stops the job: it is
# never a reason to fall back); otherwise built from source with cargo at the same ref.
#
# Inputs (environment): NORMFUZZ_VERSION (a release tag; default: the Action's ref, read from
# GITHUB_ACTION_PATH, .../_actions/OWNER/REPO/REF), NORMFUZZ_REPOSITORY (OWNER/REPO, the same
# way), NORMFUZZ_DOWNLOAD_BASE (default https://github.com/OWNER/REPO/releases/download; tests
# point it at a folder), RUNNER_TEMP, GITHUB_PATH.
set -euo pipefail

action_path="${GITHUB_ACTION_PATH:-}"
repo="${NORMFUZZ_REPOSITORY:-}"
version="${NORMFUZZ_VERSION:-}"
if [[ "$action_path" == */_actions/*/*/* ]]; then
  rest="${action_path#*/_actions/}"
  IFS=/ read -r owner name ref _ <<<"$rest"
  repo="${repo:-$owner/$name}"
  version="${version:-$ref}"
fi
if [[ -z "$repo" ]]; then
  echo "::error title=normfuzz::cannot tell which repository the Action comes from; set NORMFUZZ_REPOSITORY" >&2
  exit 1
fi

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) target=x86_64-unknown-linux-musl ;;
  Linux-aarch64 | Linux-arm64) target=aarch64-unknown-linux-musl ;;
  Darwin-x86_64) target=x86_64-apple-darwin ;;
  Darwin-arm64) target=aarch64-apple-darwin ;;
  *) target="" ;;
esac

bin="${RUNNER_TEMP:-/tmp}/normfuzz/bin"
mkdir -p "$bin"
base="${NORMFUZZ_DOWNLOAD_BASE:-https://github.com/$repo/releases/download}"
archive="normfuzz-$target.tar.gz"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -d' ' -f1
}

# Only a tag names a release: a branch or commit ref builds from source.
if [[ -n "$target" && "$version" == v[0-9]* ]] &&
  curl -fsSL --retry 3 -o "$work/$archive" "$base/$version/$archive" &&
  curl -fsSL --retry 3 -o "$work/$archive.sha256" "$base/$version/$archive.sha256"; then
  want="$(cut -d' ' -f1 "$work/$archive.sha256")"
  got="$(sha256 "$work/$archive")"
  if [[ "$want" != "$got" ]]; then
    echo "::error title=normfuzz::checksum mismatch for $archive $version: expected $want, got $got" >&2
    exit 1
  fi
  tar -xzf "$work/$archive" -C "$work"
  install -m 0755 "$work/normfuzz" "$bin/normfuzz"
  echo "installed normfuzz $version ($target, sha256 $got)"
else
  echo "::notice title=normfuzz::no release binary for ${target:-this runner} at ${version:-this ref}; building from source"
  if ! command -v cargo >/dev/null 2>&1; then
    echo "::error title=normfuzz::no release binary for ${target:-this runner} at ${version:-this ref}, and cargo is not installed to build one (add dtolnay/rust-toolchain before this Action)" >&2
    exit 1
  fi
  rev=()
  [[ -n "$version" ]] && rev=(--rev "$version")
  cargo install --locked --root "$work/root" --git "https://github.com/$repo" ${rev[@]+"${rev[@]}"} normfuzz
  install -m 0755 "$work/root/bin/normfuzz" "$bin/normfuzz"
fi
"$bin/normfuzz" --version
echo "$bin" >>"${GITHUB_PATH:-/dev/null}"
