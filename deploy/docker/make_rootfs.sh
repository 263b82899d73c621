#!/usr/bin/env bash
# Assembles the root filesystem of one rein image, offline, from what this machine has:
#   make_rootfs.sh OUT [--debs CACHE PKG...] [--ca] BINARY...
# - every BINARY goes to OUT/usr/local/bin, with exactly the shared libraries `ldd` names;
# - --debs: the Debian packages PKG and everything they depend on, downloaded with apt-get into
#   CACHE (Debian's mirror is the only registry these images need) and unpacked into OUT, with
#   /bin, /sbin, /lib and /lib64 merged into /usr as Debian 12 lays them out;
# - --ca: Debian's CA bundle, for HTTPS (the planner calls the Messages API);
# - always: /etc/passwd and /etc/group with root and the unprivileged user `rein` (65532), and
#   an empty /tmp (1777).
set -euo pipefail

out="$1"; shift
debs=(); cache=""; ca=0; bins=()
while [ $# -gt 0 ]; do
  case "$1" in
    --debs)
      cache="$2"; shift 2
      # Package names hold no '/': the binaries that follow do.
      while [ $# -gt 0 ] && [[ "$1" != --* && "$1" != */* ]]; do debs+=("$1"); shift; done ;;
    --ca) ca=1; shift ;;
    *) bins+=("$1"); shift ;;
  esac
done

rm -rf "$out"
mkdir -p "$out"

if [ ${#debs[@]} -gt 0 ]; then
  mkdir -p "$cache"
  # The closure of Depends and Pre-Depends (no Recommends), as apt resolves it.
  mapfile -t closure < <(apt-cache depends --recurse --no-recommends --no-suggests \
    --no-conflicts --no-breaks --no-replaces --no-enhances "${debs[@]}" |
    grep -E '^[a-z0-9]' | sort -u)
  missing=()
  for p in "${closure[@]}"; do
    compgen -G "$cache/${p}_*.deb" >/dev/null || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    (cd "$cache" && apt-get download -q -o APT::Sandbox::User=root "${missing[@]}" >/dev/null)
  fi
  for p in "${closure[@]}"; do
    for deb in "$cache/${p}"_*.deb; do dpkg-deb -x "$deb" "$out"; done
  done
  # Merged /usr: what packages put under /bin, /sbin, /lib, /lib64 moves to /usr.
  for d in bin sbin lib lib64; do
    if [ -d "$out/$d" ] && [ ! -L "$out/$d" ]; then
      mkdir -p "$out/usr/$d"
      cp -a "$out/$d/." "$out/usr/$d/"
      rm -rf "${out:?}/$d"
    fi
    [ -e "$out/$d" ] || ln -s "usr/$d" "$out/$d"
  done
  # What maintainer scripts would have made: sh is dash.
  [ -e "$out/usr/bin/sh" ] || ln -s dash "$out/usr/bin/sh"
  rm -rf "$out/usr/share/doc" "$out/usr/share/man" "$out/usr/share/info" "$out/usr/share/locale"
fi

mkdir -p "$out/usr/local/bin" "$out/etc" "$out/tmp"
chmod 1777 "$out/tmp"
for bin in "${bins[@]}"; do
  install -m 0755 "$bin" "$out/usr/local/bin/$(basename "$bin")"
  # ldd prints "name => /path (addr)" and "/lib64/ld-linux-x86-64.so.2 (addr)".
  while read -r lib; do
    dest="$out$lib"
    # Under a merged /usr, /lib/x86_64-linux-gnu/... lands in usr/lib through the symlink.
    [ -e "$dest" ] && continue
    mkdir -p "$(dirname "$dest")"
    cp -L "$lib" "$dest"
  done < <(ldd "$bin" | grep -oE '/[^ ]+' | sort -u)
done
if [ "$ca" = 1 ]; then
  mkdir -p "$out/etc/ssl/certs"
  cp -L /etc/ssl/certs/ca-certificates.crt "$out/etc/ssl/certs/ca-certificates.crt"
fi
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nrein:x:65532:65532:rein:/home/rein:/usr/sbin/nologin\n' \
  >"$out/etc/passwd"
printf 'root:x:0:\nrein:x:65532:\n' >"$out/etc/group"
