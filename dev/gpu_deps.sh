#!/usr/bin/env bash
# dev/gpu_deps.sh — owns carrying cifar_mpi's system libraries (Open MPI 4.1,
# HDF5 1.10, Boost.Program_options 1.74, libarchive, GoogleTest) to a machine
# that lacks them and has no network: the GPU proof machine. Debian 12 .deb
# files are fetched here with apt, travel in .debs/, and are unpacked there
# with `dpkg -x` (or `ar`+`tar`) into a relocated prefix; nothing is installed
# system-wide and no root is needed there.
#
#   dev/gpu_deps.sh download [DEBS]        here (apt): fill DEBS (default .debs)
#   dev/gpu_deps.sh unpack DEBS PREFIX     there: unpack, relocate, write PREFIX/env.sh
#   dev/gpu_deps.sh selftest PREFIX        mpicc/h5dump versions, MPI hello world at np 2
#   dev/gpu_deps.sh prove [DEBS]           here: unpack into a temp prefix and run the
#                                          selftest with this machine's copies hidden
#
# DEBS layout: main/*.deb (what the build and the run use), fallback/*.deb
# (the runtime libraries those need, for a minimal system), boost-headers.tar.gz
# (the headers Program_options needs, instead of the 138 MB libboost1.74-dev),
# MANIFEST.txt (sizes). At run time a carried library is used only where the
# system has no library of its soname (Open MPI's own always), so newer system
# copies are never shadowed. `source PREFIX/env.sh` sets PATH, LD_LIBRARY_PATH,
# CMAKE_PREFIX_PATH, OPAL_PREFIX and PMIx's dirs (Open MPI is relocated), and
# the array GPU_DEPS_CMAKE_ARGS with the hints for CMake's FindMPI/FindHDF5.
set -euo pipefail

readonly kArch=x86_64-linux-gnu
# Packages whose files the build and the run use directly.
readonly kMainPackages=(
  openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev
  libhwloc15 libevent-core-2.1-7 libevent-pthreads-2.1-7 libpmix2 libmunge2
  libhdf5-103-1 libhdf5-hl-100 libhdf5-dev hdf5-tools libsz2 libaec0
  libboost-program-options1.74.0 libboost-program-options1.74-dev
  libarchive13 libarchive-dev
  libgtest-dev libgmock-dev
)
readonly kBoostHeadersPackage=libboost1.74-dev
# Open MPI components for interconnects a single GPU node does not use (UCX,
# libfabric, InfiniBand verbs, PSM) and their common libraries; Debian's own
# openmpi-mca-params.conf disables most of them. They are removed so their
# libraries (UCX, libfabric, rdma-core, PSM) need not travel.
readonly kPrunedComponents='^(mca_(.*_ucx|.*_ofi|mtl_psm2?|btl_openib|btl_uct)\.so|libmca_common_(ucx|ofi|verbs)\.so.*)$'
# Sonames every glibc/GCC system has; never carried.
readonly kBaseSonames='^(libc|libm|libpthread|libdl|librt|libresolv|libutil|libanl|ld-linux-x86-64|libstdc\+\+|libgcc_s)\.so'

die() { echo "gpu_deps: $*" >&2; exit 1; }
log() { echo "gpu_deps: $*" >&2; }

# extract_deb DEB DIR: dpkg -x where dpkg exists, else ar + tar.
extract_deb() {
  local deb=$1 dir=$2
  mkdir -p "$dir"
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$deb" "$dir"
    return
  fi
  local member
  member=$(ar t "$deb" | grep '^data\.tar') || die "$deb: no data.tar member (is it a .deb?)"
  case $member in
    *.xz) ar p "$deb" "$member" | tar -xJ -C "$dir" ;;
    *.gz) ar p "$deb" "$member" | tar -xz -C "$dir" ;;
    *.zst) ar p "$deb" "$member" | zstd -dc | tar -x -C "$dir" ;;
    *) die "$deb: unknown compression of $member" ;;
  esac
}

# elf_field FILE NEEDED|SONAME: the dynamic-section entries of an ELF file.
elf_field() {
  readelf -d "$1" 2>/dev/null | awk -v f="($2)" '$0 ~ f {gsub(/[][]/, "", $5); print $5}'
}

# elf_files DIR: the ELF executables and shared libraries under DIR.
elf_files() {
  local f magic
  find "$1" -type f \( -name '*.so' -o -name '*.so.*' -o -perm -u+x \) -print0 |
    while IFS= read -r -d '' f; do
      IFS= read -r -n 4 magic <"$f" || true
      [[ $magic == $'\x7fELF' ]] && printf '%s\n' "$f"
    done
}

# needed_sonames DIR: sonames the ELF files under DIR need, less the pruned
# components and the sonames the tree itself provides.
needed_sonames() {
  local dir=$1 f
  local -A provided=()
  while IFS= read -r f; do
    provided[$(basename "$f")]=1
    local so
    so=$(elf_field "$f" SONAME)
    [[ -n $so ]] && provided[$so]=1
  done < <(elf_files "$dir")
  while IFS= read -r f; do
    [[ $(basename "$f") =~ $kPrunedComponents ]] && continue
    elf_field "$f" NEEDED
  done < <(elf_files "$dir") | sort -u | while IFS= read -r so; do
    [[ $so =~ $kBaseSonames ]] && continue
    [[ -n ${provided[$so]:-} ]] && continue
    echo "$so"
  done
}

# package_of SONAME: the Debian package installed here that ships SONAME.
package_of() {
  dpkg -S "*/$1" 2>/dev/null | awk -F: '!/-dev:/ {print $1; exit}' || true
}

apt_download() {
  (cd "$1" && apt-get -q -o APT::Sandbox::User=root download "${@:2}" >/dev/null)
}

# boost_header_subset DEBS: the Boost headers that cifar_mpi includes (every
# <boost/...> in src, tools, dev, tests, plus program_options.hpp) and their
# transitive include closure under C++20 (the project's standard), plus boost/config and
# boost/predef whole (compiler and platform selection), and Boost's CMake
# package files.
boost_header_subset() {
  local debs=$1 work root probe
  work=$(mktemp -d)
  apt_download "$work" "$kBoostHeadersPackage"
  root=$work/root
  extract_deb "$work"/"$kBoostHeadersPackage"_*.deb "$root"
  probe=$work/probe.cpp
  {
    echo '#include <boost/program_options.hpp>'
    grep -rhoE --include='*.[ch]pp' --include='*.h' --include='*.cc' '#include <boost/[^>]+>' src tools dev tests 2>/dev/null || true
  } | sort -u >"$probe"
  local list=$work/list
  g++ -std=c++20 -M -I "$root/usr/include" "$probe" | tr -c '[:alnum:]/._+-' '\n' |
    grep "^$root/usr/include/boost/" | sed "s|^$root/||" >"$list"
  (cd "$root" && find usr/include/boost/config usr/include/boost/predef usr/include/boost/config.hpp \
     usr/lib/"$kArch"/cmake -type f) >>"$list"
  sort -u -o "$list" "$list"
  tar -C "$root" -czf "$debs/boost-headers.tar.gz" -T "$list"
  log "boost-headers.tar.gz: $(wc -l <"$list") files from $kBoostHeadersPackage"
  rm -rf "$work"
}

# fallback_closure DEBS: download, into DEBS/fallback, the packages of every
# soname the main tree needs that it does not provide, transitively.
fallback_closure() {
  local debs=$1 work so pkg
  work=$(mktemp -d)
  local -A seen=()
  for deb in "$debs"/main/*.deb; do extract_deb "$deb" "$work/tree"; done
  while :; do
    local new=()
    while IFS= read -r so; do
      pkg=$(package_of "$so")
      [[ -n $pkg ]] || die "no installed package here ships $so; install the project's packages (tools/setup.sh) first"
      [[ -n ${seen[$pkg]:-} ]] && continue
      seen[$pkg]=1
      new+=("$pkg")
    done < <(needed_sonames "$work/tree")
    ((${#new[@]})) || break
    log "fallback: ${new[*]}"
    apt_download "$debs/fallback" "${new[@]}"
    for pkg in "${new[@]}"; do extract_deb "$debs"/fallback/"$pkg"_*.deb "$work/tree"; done
  done
  rm -rf "$work"
}

cmd_download() {
  local debs=${1:-.debs}
  command -v apt-get >/dev/null || die "download needs apt-get (run it on the Debian 12 build machine)"
  rm -rf "$debs"
  mkdir -p "$debs/main" "$debs/fallback"
  apt_download "$debs/main" "${kMainPackages[@]}"
  boost_header_subset "$debs"
  fallback_closure "$debs"
  {
    echo "# Debian 12 packages for dev/gpu_deps.sh (sizes in bytes)"
    (cd "$debs" && find . -type f ! -name MANIFEST.txt -printf '%s %P\n' | sort -k2)
    echo "total $(du -cb "$debs" | tail -n1 | cut -f1)"
  } >"$debs/MANIFEST.txt"
  log "$(tail -n1 "$debs/MANIFEST.txt") bytes in $debs ($(du -sh "$debs" | cut -f1))"
}

# system_has SONAME: the dynamic loader resolves SONAME from the system (its
# cache entry exists and is a non-empty file).
system_has() {
  local path
  while IFS= read -r path; do
    [[ -s $path ]] && return 0
  done < <("$(command -v ldconfig || echo /sbin/ldconfig)" -p 2>/dev/null | awk -v so="$1" '$1 == so && /x86-64/ {print $NF}')
  return 1
}

# link_runtime_libs PREFIX: PREFIX/lib-run, the one directory on
# LD_LIBRARY_PATH. It links every library of the main packages — the versions
# the build compiles against: HDF5 refuses a library whose version differs from
# its headers, and Open MPI's components, PMIx plugins and wrappers must match
# their libraries — and each fallback library only where the system has no
# library of that soname, so system copies of base libraries (zlib, OpenSSL,
# libcurl, ...) are never shadowed.
link_runtime_libs() {
  local prefix=$1 f so run=$1/lib-run
  command -v readelf >/dev/null || die "readelf (binutils) is needed to read sonames"
  rm -rf "$run"
  mkdir -p "$run"
  while IFS= read -r f; do
    so=$(elf_field "$f" SONAME)
    [[ -n $so && ! -e $run/$so ]] || continue
    if [[ $f == "$prefix/usr/"* ]] || ! system_has "$so"; then
      ln -s "$f" "$run/$so"
    fi
  done < <(find "$prefix/usr/lib/$kArch" -maxdepth 1 -xtype f -name 'lib*.so.*' | sort
           find "$prefix/fallback-root"/{lib,usr/lib}/"$kArch" -maxdepth 1 -xtype f -name 'lib*.so.*' 2>/dev/null | sort)
  log "lib-run: $(find "$run" -mindepth 1 | wc -l) carried libraries in use; the system provides the rest"
}

# prune_interconnects PREFIX: remove the Open MPI components (and common
# libraries) for interconnects one GPU node does not use.
prune_interconnects() {
  local a=$1/usr/lib/$kArch c
  for c in "$a"/libmca_common_* "$a"/openmpi/lib/libmca_common_* "$a"/openmpi/lib/openmpi3/mca_*.so; do
    [[ $(basename "$c") =~ $kPrunedComponents ]] && rm -f "$c"
  done
  return 0
}

# prune_unresolved PREFIX: remove any other component whose libraries cannot
# be resolved, which Open MPI would report at every start.
prune_unresolved() {
  local prefix=$1 c missing
  for c in "$prefix/usr/lib/$kArch"/openmpi/lib/openmpi3/mca_*.so; do
    missing=$(LD_LIBRARY_PATH=$prefix/lib-run ldd "$c" 2>/dev/null | grep 'not found' || true)
    if [[ -n $missing ]]; then
      log "component $(basename "$c") removed: $(echo "$missing" | tr -s ' \t\n' ' ')"
      rm -f "$c"
    fi
  done
}

# write_env PREFIX LIBPATH: PREFIX/env.sh, sourced by the scripts that use it.
write_env() {
  local p=$1 libpath=$2 bin=$1/usr/bin
  cat >"$p/env.sh.tmp" <<EOF
# Generated by dev/gpu_deps.sh unpack: the relocated Debian 12 dependencies.
export GPU_DEPS_PREFIX=$p
export PATH=$bin\${PATH:+:\$PATH}
export LD_LIBRARY_PATH=$libpath\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export CMAKE_PREFIX_PATH=$p/usr\${CMAKE_PREFIX_PATH:+:\$CMAKE_PREFIX_PATH}
# Open MPI was built for /usr: OPAL_PREFIX moves every path it derives (help
# files, components, wrapper data), OPAL_SYSCONFDIR its Debian defaults file.
# Debian's PMIx has absolute data/plugin dirs, so those two are set directly.
export OPAL_PREFIX=$p/usr
export OPAL_SYSCONFDIR=$p/etc/openmpi
export PMIX_PKGDATADIR=$p/usr/lib/$kArch/pmix2/share/pmix
export PMIX_PKGLIBDIR=$p/usr/lib/$kArch/pmix2/lib/pmix
# One node: shared memory and TCP; CMA single-copy is refused in containers.
export OMPI_MCA_pml=ob1
export OMPI_MCA_btl=self,vader,tcp
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# mpirun refuses to start, even on one node, when its rsh launcher finds
# neither ssh nor rsh; the isolated launcher starts local ranks only.
gpu_deps_launcher=isolated
for gpu_deps_dir in \${PATH//:/ }; do
  for gpu_deps_agent in ssh rsh; do
    [[ -f \$gpu_deps_dir/\$gpu_deps_agent && -x \$gpu_deps_dir/\$gpu_deps_agent ]] && gpu_deps_launcher=
  done
done
[[ -z \$gpu_deps_launcher ]] || export OMPI_MCA_plm=\$gpu_deps_launcher
unset gpu_deps_launcher gpu_deps_dir gpu_deps_agent
# CMake: FindMPI interrogates these wrappers (which honour OPAL_PREFIX);
# HDF5, Boost, LibArchive and GTest are found through CMAKE_PREFIX_PATH.
GPU_DEPS_CMAKE_ARGS=(
  -DMPI_C_COMPILER=$bin/mpicc.openmpi
  -DMPI_CXX_COMPILER=$bin/mpicxx.openmpi
  -DMPIEXEC_EXECUTABLE=$bin/mpirun.openmpi
  -DHDF5_C_COMPILER_EXECUTABLE=$bin/h5cc-not-carried
)
EOF
  mv "$p/env.sh.tmp" "$p/env.sh"
}

# Debian 12's libevent and libarchive call arc4random (glibc 2.36).
readonly kMinGlibc=2.36

cmd_unpack() {
  (($# == 2)) || die "usage: $0 unpack DEBS PREFIX"
  local debs=$1 prefix=$2 deb glibc
  [[ -d $debs/main ]] || die "$debs/main missing: run '$0 download' on the build machine and carry $debs"
  glibc=$(getconf GNU_LIBC_VERSION | awk '{print $2}')
  if [[ $(printf '%s\n' "$kMinGlibc" "$glibc" | sort -V | head -n1) != "$kMinGlibc" ]]; then
    die "glibc $glibc here; the carried Debian 12 libraries need $kMinGlibc or newer"
  fi
  mkdir -p "$prefix"
  prefix=$(cd "$prefix" && pwd)
  rm -rf "${prefix:?}"/{usr,etc,lib,fallback-root,lib-run,env.sh}
  for deb in "$debs"/main/*.deb; do extract_deb "$deb" "$prefix"; done
  tar -C "$prefix" -xzf "$debs/boost-headers.tar.gz"
  for deb in "$debs"/fallback/*.deb; do
    [[ -e $deb ]] && extract_deb "$deb" "$prefix/fallback-root"
  done
  # update-alternatives links that dpkg -x does not create.
  local name
  for name in mpicc mpicxx mpic++ mpiCC mpirun mpiexec; do
    ln -sfn "$name.openmpi" "$prefix/usr/bin/$name"
  done
  prune_interconnects "$prefix"
  link_runtime_libs "$prefix"
  prune_unresolved "$prefix"
  write_env "$prefix" "$prefix/lib-run"
  log "unpacked into $prefix ($(du -sh "$prefix" | cut -f1)); source $prefix/env.sh"
}

cmd_selftest() {
  (($# == 1)) || die "usage: $0 selftest PREFIX"
  local prefix work
  prefix=$(cd "$1" && pwd)
  # shellcheck source=/dev/null
  source "$prefix/env.sh"
  work=$(mktemp -d)
  echo "== carried libraries in use (lib-run): $(find "$prefix/lib-run" -mindepth 1 -printf "%f\n" | sort | tr '\n' ' ')"
  echo "== mpicc --version"; mpicc --version | head -n1
  echo "== mpicc --showme"; mpicc --showme
  echo "== mpirun --version"; mpirun --version | head -n1
  echo "== launcher: ${OMPI_MCA_plm:-default (rsh agent found)}"
  echo "== h5dump --version"; h5dump --version
  echo "== ompi_info: relocated paths"
  ompi_info --path prefix --path pkglibdir --path sysconfdir --parsable | sed 's/^/  /'
  cat >"$work/hello.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
  int rank, size, sum = 0, len;
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Get_library_version(version, &len);
  printf("hello from rank %d/%d, allreduce(rank)=%d, %.*s\n", rank, size, sum, 40, version);
  MPI_Finalize();
  return sum == size * (size - 1) / 2 ? 0 : 1;
}
EOF
  echo "== mpicc hello.c; ldd (MPI, HDF5 libraries)"
  mpicc -o "$work/hello" "$work/hello.c"
  ldd "$work/hello" | grep -E 'libmpi|libopen-|libhwloc|libevent|not found' | sed 's/^/  /'
  echo "== mpirun -np 2 hello"
  timeout 60 mpirun -np 2 "$work/hello"
  rm -rf "$work"
}

# prove: unpack into a temp prefix and run the selftest in a private mount
# namespace where this machine's copies of the carried packages are hidden
# (files replaced by /dev/null, their directories by an empty one), plus
# libxml2 and libcurl to exercise the fallback libraries, and ssh.
cmd_prove() {
  local debs=${1:-.debs} prefix p
  prefix=$(mktemp -d /tmp/gpudeps.XXXXXX)
  cmd_unpack "$debs" "$prefix"
  {
    for p in "${kMainPackages[@]}" "$kBoostHeadersPackage"; do dpkg -L "$p" 2>/dev/null || true; done
    for p in libxml2 libcurl4; do dpkg -L "$p" | grep '\.so\.'; done
  } | grep -E '^/(usr|etc)/' | sort -u >"$prefix.hide"
  unshare -m bash "$0" __hidden_selftest "$prefix.hide" "$prefix"
  rm -f "$prefix.hide"
  echo "== prefix kept at $prefix"
}

# hidden_selftest LIST PREFIX (inside `unshare -m`): hide LIST, then selftest.
hidden_selftest() {
  local list=$1 prefix=$2 empty f hidden=0
  empty=$(mktemp -d)
  while IFS= read -r f; do
    if [[ -d $f && ! -L $f ]]; then
      [[ $f =~ /(openmpi|pmix2|hdf5|boost|gtest|gmock)(/|$)|/cmake/. ]] || continue
      mount --bind "$empty" "$f" && hidden=$((hidden + 1))
    elif [[ -f $f ]]; then
      mount --bind /dev/null "$f" && hidden=$((hidden + 1))
    fi
  done <"$list"
  # Many containers have no ssh client either.
  for f in $(type -P ssh rsh); do mount --bind /dev/null "$f"; done
  echo "== hidden $hidden system paths of the carried packages, and ssh"
  link_runtime_libs "$prefix"
  cmd_selftest "$prefix"
}

case ${1:-} in
  download) shift; cmd_download "$@" ;;
  unpack) shift; cmd_unpack "$@" ;;
  selftest) shift; cmd_selftest "$@" ;;
  prove) shift; cmd_prove "$@" ;;
  __hidden_selftest) shift; hidden_selftest "$@" ;;  # used by prove
  *) sed -n '2,22p' "$0"; exit 2 ;;
esac
