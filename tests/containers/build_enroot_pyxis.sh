#!/usr/bin/env bash
# container.enroot_pyxis_build (fixture): NVIDIA's Enroot and Pyxis, which
# neither Debian nor PyPI ships, built from their unchanged sources for the
# tests that run the image under them (container.enroot, container.pyxis_*).
# CIFAR_THIRD_PARTY names a folder holding enroot/ (4.x) and pyxis/ (0.2x);
# tools/test.sh leaves these tests out, saying so, when it is unset.
#   OUT/enroot   Enroot's prefix (bin/enroot): built against glibc with the
#                system's libbsd and kernel headers instead of its bundled musl;
#                its enroot.conf keeps every state folder under OUT/enroot-state,
#                one set per user; Slurm's PMI hook is enabled, as Pyxis sites do
#   OUT/pyxis/spank_pyxis.so   the Slurm plugin, against this machine's Slurm
#                headers (libslurm-dev), loaded through a plugstack.conf
# Both are a few seconds to build; the packages they need come from tools/setup.sh.
set -euo pipefail
out=${1:?usage: $0 OUT_DIR}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
sources=${CIFAR_THIRD_PARTY:?CIFAR_THIRD_PARTY: a folder with the enroot/ and pyxis/ sources}
[[ -f $sources/enroot/enroot.in && -f $sources/pyxis/Makefile ]] ||
  fail "CIFAR_THIRD_PARTY=$sources lacks enroot/enroot.in or pyxis/Makefile"
for tool in make gcc mksquashfs unsquashfs jq parallel; do
  command -v "$tool" >/dev/null || fail "$tool is missing: tools/setup.sh installs Enroot's build and run-time packages"
done
makeself=/usr/share/makeself/makeself.sh
[[ -f $makeself ]] || makeself=$(command -v makeself || true)
[[ -n $makeself ]] || fail "makeself is missing (apt-get install makeself)"
rm -rf "$out"
mkdir -p "$out/src"
started=$SECONDS

# ---- Enroot ----------------------------------------------------------------------
cp -r "$sources/enroot" "$out/src/enroot"
cd "$out/src/enroot"
# Its git submodules (musl, makeself, linux headers) stay out: the system's
# makeself and kernel headers stand in, and glibc 2.36 lacks only strlcpy and
# strlcat, which libbsd gives.
mkdir -p deps/makeself deps/linux-headers deps/dist/linux/include
cp "$makeself" deps/makeself/makeself.sh
touch deps/linux-headers/.stamp
enroot_make=(make FORCE_GLIBC=1 "LDLIBS=-l:libbsd.a -l:libbsd.so.0" "prefix=$out/enroot")
if ! { "${enroot_make[@]}" -j "$(nproc)" && "${enroot_make[@]}" install; } >"$out/enroot-build.log" 2>&1; then
  tail -n 30 "$out/enroot-build.log"
  fail "building Enroot failed (log above)"
fi
conf=$out/enroot/etc/enroot
cp conf/hooks/extra/50-slurm-pmi.sh "$conf/hooks.d/"
state=$out/enroot-state
mkdir -p "$state" && chmod 1777 "$state"
# Enroot evaluates these lines with the user's shell: one state per user.
cat >>"$conf/enroot.conf" <<EOF
ENROOT_RUNTIME_PATH $state/run-\$(id -u)
ENROOT_DATA_PATH    $state/data-\$(id -u)
ENROOT_CACHE_PATH   $state/cache-\$(id -u)
ENROOT_TEMP_PATH    $state/tmp-\$(id -u)
EOF
version=$("$out/enroot/bin/enroot" version) || fail "the Enroot just built does not run"
echo "Enroot $version: $out/enroot/bin/enroot"

# ---- Pyxis -----------------------------------------------------------------------
[[ -f /usr/include/slurm/spank.h ]] || fail "Slurm's headers are missing (apt-get install libslurm-dev)"
cp -r "$sources/pyxis" "$out/src/pyxis"
make -C "$out/src/pyxis" -j "$(nproc)" >"$out/pyxis-build.log" 2>&1 ||
  { tail -n 30 "$out/pyxis-build.log"; fail "building Pyxis failed (log above)"; }
mkdir -p "$out/pyxis"
cp "$out/src/pyxis/spank_pyxis.so" "$out/pyxis/"
echo "Pyxis $(sed -n 's/^PYXIS_VER ?= *//p' "$out/src/pyxis/Makefile"): $out/pyxis/spank_pyxis.so"
rm -rf "$out/src"
echo "PASS: Enroot and Pyxis built in $((SECONDS - started)) s"
