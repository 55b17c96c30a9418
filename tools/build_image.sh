#!/usr/bin/env bash
# tools/build_image.sh — build a cifar_mpi container image with podman, from
# Debian's packages alone (no image registry needed), and export it for the
# other runtimes. docs/containers.md has the launches.
#
#   tools/build_image.sh cpu|cuda|cuda12 [--export docker-archive|charliecloud|enroot|all]...
#                        [--build DIR] [--out DIR] [--tag NAME]
#
#   cpu   Debian 12 + Debian's LibTorch 1.13, Open MPI, HDF5 (containers/):
#         the programs of an existing `cpu` build (--build, default build/cpu;
#         cmake --preset cpu && cmake --build --preset cpu), installed into
#         /opt/cifar_mpi with `cmake --install`.
#   cuda  Debian 12 + PyPI's torch with its CUDA runtime, cuDNN and NCCL
#         (tools/torch-cuda13-requirements.txt), Open MPI, HDF5 (containers/): the
#         programs of a `cuda` build (--build, default build/cuda). For hosts
#         whose driver runs CUDA 13 (R580 and newer).
#   cuda12  the same with the CUDA 12 flavour (tools/torch-cuda12-requirements.txt,
#         a `cuda12` build): for drivers from R525, the 535 nodes included.
#
# Steps, each skipped when its result is there already:
#   1. the base: a Debian 12 minbase made by mmdebstrap with the image's
#      run-time packages (containers/<image>/packages.txt), kept as
#      <out>/base-<image>-<hash of the list>.tar and imported into podman as
#      localhost/cifar-base-<image>:<hash>; a podman image of that name wins.
#   2. the context <out>/<image>/context: the install tree, the libraries the
#      programs link that no Debian package owns (found with ldd and dpkg -S),
#      the package list and the entry point.
#   3. `podman build` -> localhost/cifar_mpi:<image> (or --tag).
#   4. exports: docker-archive -> <out>/cifar_mpi-<image>.docker.tar (for
#      `apptainer build x.sif docker-archive://...`, `docker load`);
#      charliecloud -> <out>/cifar_mpi-<image>.ch/ (a directory image for
#      ch-run, as ch-convert makes it); enroot -> <out>/cifar_mpi-<image>.sqsh
#      (what `enroot import podman://...` makes, without Enroot: for
#      `enroot create` and Pyxis's --container-image).
#
# Needs root (or rootless podman), podman, runc, for a new base mmdebstrap,
# for the enroot export mksquashfs (tools/setup.sh installs them). podman runs with containers/podman.conf
# unless CONTAINERS_CONF is set. CIFAR_DEBIAN_MIRROR overrides the mirror.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

die() {
  echo "build_image: error: $*" >&2
  exit 2
}
log() { printf '[build_image %(%H:%M:%S)T] %s\n' -1 "$*"; }

image=${1:-}
case $image in
  cpu) kind=cpu ;;
  cuda) kind=cuda requirements=$repo/tools/torch-cuda13-requirements.txt ;;
  cuda12) kind=cuda requirements=$repo/tools/torch-cuda12-requirements.txt ;;
  *) die "first argument: cpu, cuda or cuda12 (got '${image}'); see the header of $0" ;;
esac
shift
exports=()
build_dir=
out=$repo/build/image
tag=localhost/cifar_mpi:$image
while (($#)); do
  case $1 in
    --export)
      case ${2:-} in
        docker-archive | charliecloud | enroot) exports+=("$2") ;;
        all) exports+=(docker-archive charliecloud enroot) ;;
        *) die "--export takes docker-archive, charliecloud, enroot or all (got '${2:-}')" ;;
      esac
      shift 2
      ;;
    --build) build_dir=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    *) die "unknown option '$1'; see the header of $0" ;;
  esac
done
build_dir=${build_dir:-$repo/build/$image}
[[ -x $build_dir/cifar_mpi ]] ||
  die "no $build_dir/cifar_mpi: build the $image preset first (cmake --preset $image && cmake --build --preset $image) or pass --build DIR"
for tool in podman runc; do
  command -v "$tool" >/dev/null || die "$tool is missing: install it (tools/setup.sh, or apt-get install podman runc)"
done
if [[ " ${exports[*]-} " == *" enroot "* ]] && ! command -v mksquashfs >/dev/null; then
  die "--export enroot needs mksquashfs: install it (tools/setup.sh, or apt-get install squashfs-tools)"
fi
export CONTAINERS_CONF=${CONTAINERS_CONF:-$repo/containers/podman.conf}
mkdir -p "$out"
out=$(cd "$out" && pwd)
started=$SECONDS

# ---- 1. the base ---------------------------------------------------------------
# Both CUDA flavours share the cuda package list, and so one base.
packages_file=$repo/containers/$kind/packages.txt
read -r -a packages <<<"$(sed 's/#.*//' "$packages_file" | tr '\n' ' ')"
# The base changes with the package list and with how mmdebstrap makes it (this script).
hash=$( (sed "s/#.*//" "$packages_file"; sed -n "/^  if \[\[ ! -s \$base_tar/,/^  fi/p" "${BASH_SOURCE[0]}") | sha256sum | cut -c1-12)
base=localhost/cifar-base-$kind:$hash
base_tar=$out/base-$kind-$hash.tar
if podman image exists "$base"; then
  log "base $base is present"
else
  if [[ ! -s $base_tar ]]; then
    command -v mmdebstrap >/dev/null ||
      die "no base image $base and no $base_tar: mmdebstrap makes one (apt-get install mmdebstrap)"
    log "making the Debian 12 base with mmdebstrap: minbase + ${#packages[@]} packages -> $base_tar"
    t0=$SECONDS
    # Debian's default mirror unless told; --include pulls each package's
    # dependencies (never their recommendations); documentation but the
    # licences, manual pages, translations, apt's lists and cache are left out.
    # shellcheck disable=SC2016  # "$1" is the hook's argument (the new root), for mmdebstrap to expand
    mmdebstrap --quiet --variant=minbase --include="$(
      IFS=,
      echo "${packages[*]}"
    )" \
      --aptopt='APT::Install-Recommends "false"' \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
      --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
      bookworm "${base_tar%.tar}.tmp.tar" ${CIFAR_DEBIAN_MIRROR:+"$CIFAR_DEBIAN_MIRROR"} ||
      die "mmdebstrap failed (Debian's mirror reachable? CIFAR_DEBIAN_MIRROR to pick another)"
    mv "${base_tar%.tar}.tmp.tar" "$base_tar"
    log "base made in $((SECONDS - t0)) s: $(du -h "$base_tar" | cut -f1)"
  fi
  t0=$SECONDS
  podman import --quiet --change 'CMD ["/bin/bash"]' "$base_tar" "$base" >/dev/null
  log "imported $base_tar as $base in $((SECONDS - t0)) s"
fi

# ---- 2. the build context --------------------------------------------------------
context=$out/$image/context
rm -rf "$context"
mkdir -p "$context/hostlibs"
cmake --install "$build_dir" --prefix "$context/prefix" >/dev/null ||
  die "cmake --install $build_dir failed"
# plot_metrics is Python with matplotlib, which no image carries: it plots on
# the host, from the metrics file a run in the image writes.
rm -f "$context/prefix/bin/plot_metrics"
cp "$packages_file" "$context/packages.txt"
cp "$repo/containers/entrypoint.sh" "$repo/containers/image_setup.sh" "$context/"
build_volumes=()
: >"$context/requirements.txt"
if [[ $kind == cuda ]]; then
  cp "$requirements" "$context/requirements.txt"
  # tools/setup_torch.sh's wheel cache, if there, spares the download.
  wheels=${CIFAR_TORCH_WHEELS:-${XDG_CACHE_HOME:-$HOME/.cache}/cifar_mpi/wheels}
  [[ -d $wheels ]] && build_volumes=(--volume "$wheels:/wheels:ro")
fi
# Libraries that no Debian package owns go in at their own paths, so the
# programs' RUNPATH finds them unchanged (a CUDA toolkit's NCCL and CUDA
# runtime that the cpu preset links where it finds them). The cuda image gets
# its LibTorch from the wheels instead (requirements.txt).
hostlib_list=$out/$image/hostlibs.txt
# The cuda builds' LibTorch, CUDA runtime and NCCL are the wheels' that the
# build's venv holds (its CIFAR_TORCH_PYTHON), found in the image through
# /etc/ld.so.conf.d: here ldd looks in the same folders of that venv.
wheel_libs=
if [[ $kind == cuda ]]; then
  torch_py=$(sed -n 's/^CIFAR_TORCH_PYTHON:FILEPATH=//p' "$build_dir/CMakeCache.txt")
  site=$("$torch_py" -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))') ||
    die "the build's CIFAR_TORCH_PYTHON ($torch_py) has no torch: run tools/setup_torch.sh for this flavour"
  wheel_libs=$(printf '%s:' "$site/torch/lib" "$site"/nvidia/*/lib)
fi
libs=()
for program in "$context"/prefix/bin/*; do
  # Scripts (plot_metrics) are no dynamic executables: ldd fails on them.
  ldd "$program" >/dev/null 2>&1 || continue
  linked=$(LD_LIBRARY_PATH=$wheel_libs${LD_LIBRARY_PATH:-} ldd "$program")
  missing_libs=$(grep 'not found' <<<"$linked" || true)
  [[ -z $missing_libs ]] || die "$program: $(tr -s ' \t\n' ' ' <<<"$missing_libs")"
  mapfile -t -O "${#libs[@]}" libs < <(awk '$3 ~ /^\// {print $3}' <<<"$linked")
done
mapfile -t libs < <(printf '%s\n' "${libs[@]}" | sort -u)
# One dpkg -S for every library under each of its names (the path ldd
# prints, the file it links to, the /usr path of a merged /lib).
declare -A owned=()
while IFS= read -r path; do owned[$path]=1; done < <(
  for lib in "${libs[@]}"; do printf '%s\n%s\n/usr%s\n' "$lib" "$(readlink -f "$lib")" "$lib"; done |
    xargs dpkg -S 2>/dev/null | sed 's/^[^:]*:[^ ]* //; s/^.*: //'
)
: >"$hostlib_list"
for lib in "${libs[@]}"; do
  [[ -n ${owned[$lib]:-} || -n ${owned[$(readlink -f "$lib")]:-} || -n ${owned[/usr$lib]:-} ]] && continue
  [[ $kind == cuda && $lib == */site-packages/* ]] && continue
  mkdir -p "$context/hostlibs$(dirname "$lib")"
  cp -L "$lib" "$context/hostlibs$lib"
  echo "$lib" >>"$hostlib_list"
done
if [[ -s $hostlib_list ]]; then
  hint=
  grep -q libnccl "$hostlib_list" && hint="; configure with -DCIFAR_WITH_NCCL=OFF to leave NCCL out"
  log "not from Debian, copied in at their paths: $(tr '\n' ' ' <"$hostlib_list")" \
    "($(du -sh "$context/hostlibs" | cut -f1)$hint)"
fi

# ---- 3. podman build ---------------------------------------------------------------
t0=$SECONDS
log "podman build $tag from $base"
# The host's network: RUN steps need one only to reach Debian's mirror or PyPI
# (a base without the packages, the cuda wheels), and it needs no CNI/netavark.
gpus=
[[ $kind == cpu ]] || gpus=all
# podman build --layers keeps an untagged image per step, the cache that
# makes a rebuild take seconds; the image this build replaces under $tag would
# stay behind with its own steps (6 GB for a cuda image), so it is removed,
# and podman removes with it each of its steps no other image uses.
replaced=$(podman image inspect --format '{{.Id}}' "$tag" 2>/dev/null) || replaced=
podman build --quiet --layers --network host "${build_volumes[@]+"${build_volumes[@]}"}" --build-arg "BASE=$base" \
  --build-arg "IMAGE=$image" --build-arg "GPUS=$gpus" -f "$repo/containers/Containerfile" \
  -t "$tag" "$context" >/dev/null || die "podman build failed"
size=$(podman image inspect --format '{{.Size}}' "$tag")
if [[ -n $replaced && $replaced != "$(podman image inspect --format '{{.Id}}' "$tag")" ]]; then
  # Kept when something still uses it: another name, a container.
  podman rmi "$replaced" >/dev/null 2>&1 && log "removed the image it replaces, ${replaced:0:12}, and its unshared steps"
fi
log "built $tag in $((SECONDS - t0)) s: $((size / 1000000)) MB"

# ---- 4. exports ----------------------------------------------------------------------
# export_rootfs DIR: the image's files in DIR (what `podman export` gives of a
# container, without the device nodes no unprivileged runtime can use).
export_rootfs() {
  local container
  rm -rf "$1"
  mkdir -p "$1"
  container=$(podman create "$tag" /bin/true)
  podman export "$container" | tar -x -C "$1" --exclude=dev/* || die "podman export $tag failed"
  podman rm "$container" >/dev/null
}
# image_config FIELD: the words of a list of the image's configuration
# (Env, Entrypoint, Cmd), one a line.
image_config() { podman image inspect --format "{{range .Config.$1}}{{println .}}{{end}}" "$tag" | sed '/^$/d'; }
# shell_words: the lines read, each quoted as one word for sh, space-separated.
shell_words() { while IFS= read -r word; do printf "'%s' " "${word//\'/\'\\\'\'}"; done; }

# enroot_configure ROOTFS: the files `enroot import` writes into an image's
# root: /etc/environment (the image's ENV, which `enroot start` and Pyxis
# read), /etc/rc (the working folder, entry point and command, which `enroot
# start` runs), an empty /etc/rc.local and /etc/fstab.
enroot_configure() {
  local rootfs=$1 workdir entrypoint cmd
  image_config Env >"$rootfs/etc/environment"
  : >"$rootfs/etc/fstab"
  echo "# Sourced by /etc/rc when the container starts." >"$rootfs/etc/rc.local"
  workdir=$(podman image inspect --format '{{.Config.WorkingDir}}' "$tag")
  workdir=${workdir:-/}
  entrypoint=$(image_config Entrypoint | shell_words)
  cmd=$(image_config Cmd | shell_words)
  cat >"$rootfs/etc/rc" <<EOF
# enroot-provenance: tools/build_image.sh $tag
mkdir -p '$workdir' 2>/dev/null
cd '$workdir' && unset OLDPWD || exit 1
if [ -s /etc/rc.local ]; then
  . /etc/rc.local
fi
if [ \$# -gt 0 ]; then
  exec $entrypoint"\$@"
else
  exec $entrypoint$cmd
fi
EOF
}

exported_rootfs=  # the charliecloud export of this run: the image's files, for the enroot export too
for kind in "${exports[@]+"${exports[@]}"}"; do
  t0=$SECONDS
  case $kind in
    docker-archive)
      target=$out/cifar_mpi-$image.docker.tar
      rm -f "$target"
      podman save --quiet --format docker-archive -o "$target" "$tag"
      ;;
    charliecloud)
      # What `ch-convert -i podman -o dir` makes, without its gzip round trip
      # (2 min against ~15 s here): the image's files, and its environment in
      # /ch/environment for `ch-run --set-env`.
      target=$out/cifar_mpi-$image.ch
      export_rootfs "$target"
      mkdir -p "$target/ch"
      image_config Env >"$target/ch/environment"
      exported_rootfs=$target
      ;;
    enroot)
      # A squashfs of the root file system, every file owned by root (Enroot
      # maps whoever starts it to root inside), made as Enroot makes its own
      # (ENROOT_SQUASH_OPTIONS, default Enroot's: data blocks stored plain,
      # so `enroot create` unpacks them at disk speed).
      # From the charliecloud export when this run made one (its ch/ left
      # out; Enroot's files in /etc are ignored by ch-run): a second podman
      # export of 1.2 GB costs more than the squashfs itself.
      target=$out/cifar_mpi-$image.sqsh
      rootfs=$exported_rootfs
      if [[ -z $rootfs ]]; then
        rootfs=$out/$image/enroot-rootfs
        export_rootfs "$rootfs"
      fi
      enroot_configure "$rootfs"
      rm -f "$target" "$target.tmp"
      # shellcheck disable=SC2086  # the options are separate words, as Enroot passes them
      mksquashfs "$rootfs" "$target.tmp" -all-root -no-progress -quiet ${ENROOT_SQUASH_OPTIONS:--comp lzo -noD} \
        ${exported_rootfs:+-e ch} >/dev/null || die "mksquashfs $rootfs failed"
      mv "$target.tmp" "$target"
      [[ -n $exported_rootfs ]] || rm -rf "$rootfs"
      ;;
  esac
  log "exported $kind: $target ($(du -sh "$target" | cut -f1)) in $((SECONDS - t0)) s"
done
log "done in $((SECONDS - started)) s"
