#!/usr/bin/env bash
# install.easyconfig: EasyBuild (pinned, in .venv-easybuild) builds and
# installs easybuild/cifar_mpi-<version>.eb from a tarball of this clone into
# a temporary installpath, with Lmod as modules tool; then a fresh shell in
# another folder loads the module it wrote (module use <installpath>/modules/all;
# module load cifar_mpi): PATH, CIFAR_MPI_HOME and HDF5_USE_FILE_LOCKING as
# the project's own module files set them, `mpirun -np 2 cifar_mpi --check-env`
# and five training steps of the installed smoke config print what they must.
#
# Time: the build reuses ccache's results of the cpu preset's build
# (configured as CI does, -DCIFAR_WERROR=ON): the copy of the easyconfig adds
# the preset's ccache launcher and -DCIFAR_WERROR=ON, builds in
# <source>/build/cpu, the preset's place, and lets CMake pick the compiler as
# the preset does (c++, not the CC=gcc CXX=g++ that EasyBuild sets: ccache
# hashes the compiler's name), so that every compile is the preset's to the
# byte (cmake/Dependencies.cmake makes paths relative to the source folder);
# and it runs eb --disable-rpath: EasyBuild's RPATH wrappers are
# new scripts in a temporary folder at every run, which ccache, identifying
# the compiler by its mtime, would never find again (the libraries are the
# OS's, in the loader's folders: the RPATH adds nothing). With a cold cache
# the test compiles everything (minutes).
#
# Writes nothing outside its work folder, .venv-easybuild and ccache's cache:
# HOME, TMPDIR and EasyBuild's paths are under the work folder, and the user's
# EasyBuild configuration (files and EASYBUILD_* variables) is not read.
# shellcheck source=tests/install/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
name=cifar_mpi-$VERSION
ec=$source_dir/easybuild/$name.eb
[[ -f $ec ]] || fail "no $ec: the easyconfig is named after project(... VERSION $VERSION) of CMakeLists.txt"
grep -Eq "^version = '$VERSION'$" "$ec" || fail "$ec does not say version = '$VERSION' (CMakeLists.txt's)"
lmod_init=${LMOD_INIT:-/usr/share/lmod/lmod/init/bash}
[[ -r $lmod_init ]] || fail "$lmod_init missing: install Debian's lmod (bash tools/setup.sh)"
command -v ccache >/dev/null || fail "ccache missing (bash tools/setup.sh)"
t0=$SECONDS

PIP_NO_CACHE_DIR=1 bash "$source_dir/dev/setup_python_tools.sh" easybuild
venv=${CIFAR_EASYBUILD_VENV:-$source_dir/.venv-easybuild}
echo "== EasyBuild ready after $((SECONDS - t0)) s"

# The source tarball that `sources` names: the working tree's files that git
# tracks or would (what the cpu preset compiled), under cifar_mpi-<version>/.
mkdir -p "$WORK/sources" "$WORK/ec" "$WORK/home" "$WORK/tmp" "$WORK/run"
(cd "$source_dir" && git ls-files -z --cached --others --exclude-standard |
  tar --null --files-from=- --ignore-failed-read --transform="s,^,$name/,SH" -czf "$WORK/sources/$name.tar.gz")
cp "$ec" "$WORK/ec/"
cat >>"$WORK/ec/$name.eb" <<'EC'
configopts += ' -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCIFAR_WERROR=ON'
separate_build_dir = '%(name)s-%(version)s/build/cpu'
preconfigopts = 'env -u CC -u CXX '
EC

export CCACHE_DIR=${CCACHE_DIR:-$(ccache -k cache_dir)}
export HOME=$WORK/home TMPDIR=$WORK/tmp XDG_CONFIG_HOME=$WORK/home/.config XDG_CONFIG_DIRS=$WORK/home/xdg
while read -r var; do unset "$var"; done < <(compgen -e | grep '^EASYBUILD_' || true)
set +u  # Lmod's shell functions read unset variables
# shellcheck source=/dev/null
source "$lmod_init"
set -u
installpath=$WORK/eb/install
ccache_before=$(ccache --print-stats | awk '$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" {s += $2} END {print s}')
t1=$SECONDS
EB_PYTHON=$venv/bin/python3 "$venv/bin/eb" "$WORK/ec/$name.eb" --prefix="$WORK/eb" --installpath="$installpath" \
  --buildpath="$WORK/eb/build" --sourcepath="$WORK/sources" --tmpdir="$WORK/tmp" --modules-tool=Lmod \
  --disable-rpath --allow-use-as-root-and-accept-consequences >"$WORK/eb.log" 2>&1 ||
  { tail -n 40 "$WORK/eb.log"; fail "eb failed (above; its log is named there)"; }
tail -n 8 "$WORK/eb.log"
expect "$WORK/eb.log" '^== COMPLETED: Installation ended successfully'
ccache_after=$(ccache --print-stats | awk '$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" {s += $2} END {print s}')
echo "== eb built and installed $name in $((SECONDS - t1)) s; ccache hits: $((ccache_after - ccache_before))"

# A fresh shell in another folder: only the module's environment.
software=$installpath/software/cifar_mpi/$VERSION
cd "$WORK/run"
# The script goes on bash's command line, not its standard input, which
# mpirun would forward to rank 0.
script=$(cat <<EOF
set -euo pipefail
$(declare -f fail mpi expect)
set +u
source "\$LMOD_INIT"
set -u
module use "\$MODULES"
module load cifar_mpi
module list
module show cifar_mpi
[[ \$(command -v cifar_mpi) == "\$SOFTWARE/bin/cifar_mpi" ]] || fail "cifar_mpi on PATH is '\$(command -v cifar_mpi)'"
[[ \$CIFAR_MPI_HOME == "\$SOFTWARE" ]] || fail "CIFAR_MPI_HOME=\$CIFAR_MPI_HOME, expected \$SOFTWARE"
[[ \$HDF5_USE_FILE_LOCKING == FALSE ]] || fail "HDF5_USE_FILE_LOCKING=\$HDF5_USE_FILE_LOCKING"
cifar_pack --synthetic 5000 --test-count 1000 --seed 1 --output synthetic.h5
mpi 2 cifar_mpi --check-env --device cpu --data synthetic.h5
mpi 2 cifar_mpi --config smoke --data synthetic.h5 --max-steps 5
EOF
)
env -i HOME="$HOME" TMPDIR="$TMPDIR" PATH=/usr/local/bin:/usr/bin:/bin LMOD_INIT="$lmod_init" MPIEXEC=mpirun \
  MODULES="$installpath/modules/all" SOFTWARE="$software" \
  bash --noprofile --norc -c "$script" >"$WORK/run.log" 2>&1 </dev/null ||
  { cat "$WORK/run.log"; fail "the installed module's run failed (above)"; }
cat "$WORK/run.log"
expect "$WORK/run.log" "^ +1\) cifar_mpi/$VERSION"
expect "$WORK/run.log" '^ready to train$'
expect "$WORK/run.log" "^configuration \(file $software/share/cifar_mpi/config/smoke.ini, command line wins\):$"
expect "$WORK/run.log" '^RESULT train_seconds=[0-9.]+ images_per_second=[0-9.]+ test_accuracy=[0-9.]+$'
[[ -s $WORK/run/runs/smoke_model.pth ]] || fail "no runs/smoke_model.pth in $WORK/run"
echo "PASS: eb installed $name (Lmod module cifar_mpi/$VERSION) in $((SECONDS - t0)) s in all;" \
  "the module's cifar_mpi checked its placement and trained 5 steps"
