#!/usr/bin/env bash
# The images, end to end: builds the four images from this build's binaries, starts each
# image's entrypoint inside its image with `buildah run --isolation chroot` on loopback ports,
# checks grpc.health.v1 reports SERVING, and runs the secrets-audit example through the three
# containerised services with the reinctl image. Then it checks the executor image's sandbox:
# the kernel refuses user namespaces to a chrooted process (clone(2), EPERM), so under buildah's
# chroot isolation bubblewrap cannot start; a container runtime pivots into the image's root
# instead, which this test does with bubblewrap itself, running the image's executor as its
# unprivileged user and a command in the image's toolbox through a whole run.
set -euo pipefail

R="${TEST_SRCDIR:?}/${TEST_WORKSPACE:-rein}"
HEALTH="$R/common/rein-health"
tag="test-$$"
dir="$(mktemp -d /tmp/rein-container-test-XXXXXX)"
chmod 755 "$dir"
containers=()
pids=()

cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for c in "${containers[@]}"; do buildah umount "$c" >/dev/null 2>&1 || true; buildah rm "$c" >/dev/null 2>&1 || true; done
  for i in rein-router rein-planner rein-executor reinctl; do buildah rmi "$i:$tag" >/dev/null 2>&1 || true; done
  rm -rf "$dir"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  for f in "$dir"/*.log; do [ -f "$f" ] && { echo "---- $f" >&2; tail -n 30 "$f" >&2; }; done
  exit 1
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_serving() {  # target [service]
  for _ in $(seq 1 200); do
    "$HEALTH" "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}

echo "== building the images (tag $tag)"
"$R/deploy/docker/build_images.sh" --bin_dir "$R" --revision "$tag" --tag "$tag" | tee "$dir/sizes.txt"

# Each image's configuration: labels, user, entrypoint.
for image in rein-router rein-planner rein-executor reinctl; do
  rev=$(buildah inspect --type image --format '{{index .OCIv1.Config.Labels "org.opencontainers.image.revision"}}' "$image:$tag")
  [ "$rev" = "$tag" ] || fail "$image: revision label is '$rev'"
  user=$(buildah inspect --type image --format '{{.OCIv1.Config.User}}' "$image:$tag")
  [ "$user" = "65532:65532" ] || fail "$image: runs as '$user', not the unprivileged user"
done
for image in rein-router rein-planner reinctl; do
  c=$(buildah from -q "$image:$tag"); containers+=("$c")
  mnt=$(buildah mount "$c")
  for sh in bin/sh usr/bin/sh bin/bash usr/bin/bash; do
    [ -e "$mnt/$sh" ] && fail "$image has a shell ($sh)"
  done
  buildah umount "$c" >/dev/null
done

# run_in IMAGE LOG ARGS...: the image's entrypoint with ARGS, in the background.
run_in() {
  local image=$1 log=$2; shift 2
  local c entry
  c=$(buildah from -q "$image:$tag"); containers+=("$c")
  entry=$(buildah inspect --type image --format '{{index .OCIv1.Config.Entrypoint 0}}' "$image:$tag")
  buildah run --isolation chroot --network host "${VOLUMES[@]}" "$c" -- "$entry" "$@" >"$dir/$log" 2>&1 &
  pids+=($!)
}

RP=$(free_port); PP=$(free_port); EP=$(free_port)
mkdir -p "$dir/state" "$dir/workspaces"
cp -r "$R/examples/secrets_audit/workspaces/." "$dir/workspaces/"
cp "$R/examples/secrets_audit/planner_script.json" "$dir/script.json"
chown -R 65532:65532 "$dir/state" "$dir/workspaces"
chmod 644 "$dir/script.json"

echo "== the three services, each in its image (buildah run --isolation chroot)"
VOLUMES=(-v "$dir/workspaces:/workspaces")
run_in rein-executor executor.log --listen=127.0.0.1:$EP --workspace_root=/workspaces
VOLUMES=(-v "$dir/script.json:/etc/rein/script.json:ro")
run_in rein-planner planner.log --listen=127.0.0.1:$PP --backend=scripted --script=/etc/rein/script.json
wait_serving 127.0.0.1:$EP || fail "executor image did not report SERVING"
wait_serving 127.0.0.1:$PP || fail "planner image did not report SERVING"
VOLUMES=(-v "$dir/state:/var/lib/rein")
run_in rein-router router.log --listen=127.0.0.1:$RP --store=sqlite:/var/lib/rein/rein.db \
  --planner_target=127.0.0.1:$PP --executor_target=127.0.0.1:$EP
wait_serving 127.0.0.1:$RP || fail "router image did not report SERVING"
echo "SERVING: router 127.0.0.1:$RP, planner :$PP, executor :$EP"
for log in executor planner router; do  # the images' GLIBC_TUNABLES, in effect at start
  grep -q '"msg":"malloc tunables","GLIBC_TUNABLES":"glibc.malloc.tcache_count=128"' \
    "$dir/$log.log" || fail "$log image: not started with the images' GLIBC_TUNABLES"
done

echo "== the secrets-audit example with the reinctl image"
ctl=$(buildah from -q "reinctl:$tag"); containers+=("$ctl")
reinctl() { buildah run --isolation chroot --network host "$ctl" -- /usr/local/bin/reinctl --router=127.0.0.1:$RP "$@"; }
out=$(reinctl start --goal="Audit the repository for hard-coded API keys and tokens." \
  --workspace=sample-repo --tools=list_files,search_text,read_file,file_info \
  --max_iterations=20 --deadline=2m) || fail "reinctl start: $out"
run_id=$(echo "$out" | tail -n 1 | awk '{print $NF}')
reinctl watch "$run_id" >"$dir/watch.log" 2>&1 || fail "reinctl watch $run_id did not end well"
grep -q "FINISHED" "$dir/watch.log" || fail "run $run_id did not finish"
reinctl show "$run_id" | grep -q "GOAL_ACHIEVED" || fail "run $run_id: no GOAL_ACHIEVED"
echo "run $run_id FINISHED (GOAL_ACHIEVED) through the containerised services"

echo "== the executor image's sandbox under a pivot_root runtime"
ex=$(buildah from -q "rein-executor:$tag"); containers+=("$ex")
# A copy of the image's root: buildah's storage is readable by root only.
mkdir -p "$dir/rootfs"
cp -a "$(buildah mount "$ex")/." "$dir/rootfs/"
root="$dir/rootfs"
SP=$(free_port)
mkdir -p "$dir/box/default"
chown -R 65532:65532 "$dir/box"
# /proc as the runtime leaves it unmasked (Kubernetes: procMount Unmasked): the kernel lets the
# sandbox mount its own /proc only where a proc mount is fully visible, with nothing mounted over
# parts of it (see deploy/k8s/README.md).
# The runtime runs as the image's user, as a pod without a user namespace of its own does.
setpriv --reuid=65532 --regid=65532 --clear-groups -- \
  bwrap --bind "$root" / --bind "$dir/box" /workspaces --bind /proc /proc --dev /dev --tmpfs /tmp \
  --unshare-pid --unshare-ipc --unshare-uts --unshare-user --die-with-parent \
  /usr/local/bin/rein-executor --listen=127.0.0.1:$SP --workspace_root=/workspaces >"$dir/sandboxed-executor.log" 2>&1 &
pids+=($!)
wait_serving 127.0.0.1:$SP rein.v1.Executor.sandbox || fail "the executor image's sandbox is not SERVING"
cat >"$dir/toolbox.json" <<'SCRIPT'
{"plan": [{"when": {"completed_contains": "toolbox"}, "reply": {"subtasks": [], "goalAchieved": false}},
          {"reply": {"subtasks": [{"id": "toolbox", "description": "use the toolbox",
            "allowedTools": ["run_command"]}]}}],
 "decide": [{"reply": {"toolCall": {"tool": "run_command", "args": {"shell":
   "python3 -c 'print(6*7)' && git --version && id -u && sed --version | head -n 1 && echo x > out.txt && cat out.txt"}}}}],
 "evaluate": [{"when": {"observation_contains": "42"},
               "reply": {"status": "COMPLETED", "summary": "${observation}", "goalAchieved": true}},
              {"reply": {"status": "FAILED", "summary": "${observation}"}}]}
SCRIPT
chmod 644 "$dir/toolbox.json"
PP2=$(free_port); RP2=$(free_port)
VOLUMES=(-v "$dir/toolbox.json:/etc/rein/script.json:ro")
run_in rein-planner planner2.log --listen=127.0.0.1:$PP2 --backend=scripted --script=/etc/rein/script.json
mkdir -p "$dir/state2"; chown 65532:65532 "$dir/state2"
VOLUMES=(-v "$dir/state2:/var/lib/rein")
run_in rein-router router2.log --listen=127.0.0.1:$RP2 --store=sqlite:/var/lib/rein/rein.db \
  --planner_target=127.0.0.1:$PP2 --executor_target=127.0.0.1:$SP
wait_serving 127.0.0.1:$PP2 || fail "planner did not report SERVING"
wait_serving 127.0.0.1:$RP2 || fail "router did not report SERVING"
reinctl2() { buildah run --isolation chroot --network host "$ctl" -- /usr/local/bin/reinctl --router=127.0.0.1:$RP2 "$@"; }
out=$(reinctl2 start --goal="Use the toolbox" --workspace=default --tools=run_command --max_iterations=5 --deadline=1m) || fail "start: $out"
run_id=$(echo "$out" | tail -n 1 | awk '{print $NF}')
reinctl2 watch "$run_id" >"$dir/watch2.log" 2>&1 || fail "toolbox run $run_id did not end well: $(cat "$dir/watch2.log")"
grep -q "FINISHED" "$dir/watch2.log" || fail "toolbox run did not finish"
[ "$(cat "$dir/box/default/out.txt")" = "x" ] || fail "the sandboxed command's file is missing"
echo "toolbox run $run_id FINISHED: python3, git, sed and sh ran in the sandbox of the executor image"
echo "container test: passed"
