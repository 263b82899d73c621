#!/usr/bin/env bash
# Builds the four rein images with buildah, offline (no registry): rein-router, rein-planner,
# rein-executor and reinctl, each tagged with every --tag given.
#   build_images.sh --bin_dir DIR --revision REV --tag TAG [--tag TAG...] [--deb_cache DIR]
# DIR holds the Bazel outputs in their package layout (bazel-bin, or a test's runfiles):
# router_service/rein-router, planner_service/rein-planner, executor_service/rein-executor,
# cli/reinctl, common/rein-health. Prints each image's name and size.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin_dir=""; revision="unknown"; tags=(); deb_cache="${REIN_DEB_CACHE:-/var/cache/rein-debs}"
while [ $# -gt 0 ]; do
  case "$1" in
    --bin_dir) bin_dir="$2"; shift 2 ;;
    --revision) revision="$2"; shift 2 ;;
    --tag) tags+=("$2"); shift 2 ;;
    --deb_cache) deb_cache="$2"; shift 2 ;;
    *) echo "build_images.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$bin_dir" ] && [ ${#tags[@]} -gt 0 ] || { echo "build_images.sh: --bin_dir and --tag are required" >&2; exit 2; }

# The executor's toolbox: what commands in the sandbox can use. /usr is read-only there.
EXECUTOR_PACKAGES=(bubblewrap dash bash coreutils findutils diffutils grep sed tar gzip git python3)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

build() {
  local name=$1; shift
  local ctx="$work/$name"
  mkdir -p "$ctx/state"
  "$here/make_rootfs.sh" "$ctx/rootfs" "$@"
  cp "$here/$name.Containerfile" "$ctx/Containerfile"
  local tag_args=()
  for t in "${tags[@]}"; do tag_args+=(-t "$name:$t"); done
  local old
  old=$(buildah images --quiet "$name:${tags[0]}" 2>/dev/null | head -n 1 || true)
  buildah bud --isolation chroot --quiet --layers=false --build-arg "REVISION=$revision" \
    "${tag_args[@]}" "$ctx" >/dev/null
  local size
  size=$(buildah images --format '{{.Size}}' "$name:${tags[0]}" | head -n 1)
  # The image these tags named before, unless something else still names it.
  [ -n "$old" ] && buildah rmi "$old" >/dev/null 2>&1 || true
  echo "$name:${tags[0]} $size"
}

b="$(cd "$bin_dir" && pwd)"
build rein-router "$b/router_service/rein-router" "$b/common/rein-health"
build rein-planner --ca "$b/planner_service/rein-planner" "$b/common/rein-health"
build rein-executor --debs "$deb_cache" "${EXECUTOR_PACKAGES[@]}" \
  "$b/executor_service/rein-executor" "$b/common/rein-health" \
  "$b/executor_service/rein-sandbox-init" "$b/executor_service/rein-spawner"
build reinctl "$b/cli/reinctl"
