# shellcheck shell=bash
# Shared by the install tests (sourced).
# The e2e tests' helpers: WORK (fresh, the working folder), fail, mpi.
# shellcheck source=tests/e2e/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../e2e/common.sh"
: "${BUILD_DIR:?}" "${PREFIX:?}" "${MPIEXEC:?}" "${VERSION:?}"

# expect FILE REGEX: FILE has a line matching REGEX (else it is shown).
expect() {
  grep -Eq -- "$2" "$1" || { cat "$1" >&2; fail "no line matching /$2/ in $1 (shown above)"; }
}
# The files every install has, relative to its prefix.
kInstalledFiles=(bin/cifar_mpi bin/cifar_pack bin/cifar_eval bin/allreduce_bench bin/compare_models bin/plot_metrics
  share/cifar_mpi/config/default.ini share/cifar_mpi/config/smoke.ini share/cifar_mpi/config/resnet18.ini
  share/cifar_mpi/jobs/train.slurm share/cifar_mpi/jobs/train_multinode.slurm share/cifar_mpi/jobs/run_cifar.sh
  share/cifar_mpi/jobs/cifar_common.sh share/cifar_mpi/jobs/cifar_restart.sh share/cifar_mpi/jobs/cifar_runtimes.sh
  share/cifar_mpi/jobs/local_mpirun.sh
  share/doc/cifar_mpi/README.md share/doc/cifar_mpi/LICENSE share/doc/cifar_mpi/install.md
  share/doc/cifar_mpi/slurm.md
  "share/modulefiles/cifar_mpi/$VERSION.lua" "share/modules/modulefiles/cifar_mpi/$VERSION")
kPrograms=(cifar_mpi cifar_pack cifar_eval allreduce_bench compare_models)

# expect_install ROOT: every installed file is under ROOT, programs and job scripts executable.
expect_install() {
  local root=$1 f
  for f in "${kInstalledFiles[@]}"; do
    [[ -f $root/$f ]] || fail "$root/$f is missing"
  done
  for f in bin/plot_metrics share/cifar_mpi/jobs/run_cifar.sh share/cifar_mpi/jobs/local_mpirun.sh \
    "${kPrograms[@]/#/bin/}"; do
    [[ -x $root/$f ]] || fail "$root/$f is not executable"
  done
}

# expect_libraries_found PROGRAM: the dynamic loader finds every library PROGRAM needs.
expect_libraries_found() {
  if ldd "$1" | grep -q 'not found'; then
    ldd "$1" | grep 'not found' >&2
    fail "$1 misses libraries (RUNPATH: $(readelf -d "$1" | grep -E 'RUNPATH|RPATH' || echo none))"
  fi
}
