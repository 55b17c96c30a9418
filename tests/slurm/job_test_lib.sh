# shellcheck shell=bash
# tests/slurm/job_test_lib.sh — the frame every Slurm job-script test shares:
# command-line parsing (--repo, --build), a private temp folder, a one-node
# cluster that is ALWAYS shut down on exit (success, failure or interrupt),
# submitting jobs/train.slurm with CPU-sized overrides, and checks on the
# finished job. Sourced by tests/slurm/test_*.sh.
set -euo pipefail

# shellcheck source=tests/slurm/mini_cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/mini_cluster.sh"

JOB_TEST_REPO=
JOB_TEST_BUILD=
JOB_TEST_ARGS=()  # arguments the test script itself understands

# job_test_parse_args ARGS...: takes --repo and --build, leaves the rest in JOB_TEST_ARGS.
job_test_parse_args() {
  while (($#)); do
    case $1 in
      --repo) JOB_TEST_REPO=$2; shift 2 ;;
      --build) JOB_TEST_BUILD=$2; shift 2 ;;
      *) JOB_TEST_ARGS+=("$1"); shift ;;
    esac
  done
  [[ -d $JOB_TEST_REPO/jobs ]] || job_test_fail "--repo must be the repository root (got '$JOB_TEST_REPO')"
  [[ -x $JOB_TEST_BUILD/cifar_mpi ]] || job_test_fail "--build must hold cifar_mpi (got '$JOB_TEST_BUILD')"
}

# job_test_parse_data_args ARGS...: job_test_parse_args for a test that takes
# only --data FILE besides (a small HDF5 file), which it sets in JOB_TEST_DATA.
job_test_parse_data_args() {
  job_test_parse_args "$@"
  JOB_TEST_DATA=
  set -- "${JOB_TEST_ARGS[@]+"${JOB_TEST_ARGS[@]}"}"
  while (($#)); do
    case $1 in
      --data) JOB_TEST_DATA=$2; shift 2 ;;
      *) job_test_fail "unknown option $1" ;;
    esac
  done
  [[ -r $JOB_TEST_DATA ]] || job_test_fail "--data FILE must be a small HDF5 file (got '$JOB_TEST_DATA')"
}

job_test_fail() {
  echo "FAIL: $*" >&2
  [[ -n $MINI_CLUSTER_DIR ]] && mini_cluster_dump_logs >&2
  exit 1
}

# Shuts the cluster down; keeps the temp folder of a failed run (or of any run
# with CIFAR_SLURM_TEST_KEEP=1) for a post-mortem.
job_test_cleanup() {
  local status=$?
  mini_cluster_stop
  if ((status == 0)) && [[ -z ${CIFAR_SLURM_TEST_KEEP:-} ]]; then
    rm -rf "$JOB_TEST_TMP"
  else
    echo "test exit status $status; files kept in $JOB_TEST_TMP" >&2
  fi
}

# job_test_start: temp folder, cluster, and a submit folder with logs/.
# JOB_TEST_SPANK_PLUGIN, when set, is a SPANK plugin and its options, the
# last of them a folder option whose value is left empty (runtime_path=): the
# cluster loads the plugin with that folder under the temp folder.
job_test_start() {
  JOB_TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/cifar-slurm.XXXXXX")
  trap job_test_cleanup EXIT
  trap 'exit 130' INT TERM
  # Run inside a site's Slurm job (CI on a cluster), the job's own SLURM_*,
  # SBATCH_* and SRUN_* variables would leak into the test cluster's jobs.
  local var
  for var in $(compgen -e | grep -E '^(SLURM|SBATCH|SRUN|SALLOC)_' || true); do
    unset "$var"
  done
  JOB_TEST_WORK=$JOB_TEST_TMP/work
  mkdir -p "$JOB_TEST_WORK/logs"
  if [[ -n ${JOB_TEST_SPANK_PLUGIN:-} ]]; then
    mkdir -p "$JOB_TEST_TMP/spank"
    echo "required ${JOB_TEST_SPANK_PLUGIN}$JOB_TEST_TMP/spank" >"$JOB_TEST_TMP/plugstack.conf"
    export MINI_CLUSTER_PLUGSTACK=$JOB_TEST_TMP/plugstack.conf
  fi
  mini_cluster_start "$JOB_TEST_TMP/cluster"
}

# job_test_submit NAME NTASKS [SBATCH_OPTION... --] [VAR=VALUE...]: submits
# jobs/train.slurm as it is, with command-line overrides that fit a CPU-only
# test machine (later options win), and the given CIFAR_* settings in the
# job's environment; prints the job id.
job_test_submit() {
  local name=$1 ntasks=$2 options=()
  shift 2
  if [[ " $* " == *" -- "* ]]; then
    while [[ $1 != -- ]]; do
      options+=("$1")
      shift
    done
    shift
  fi
  env "$@" sbatch --parsable --chdir="$JOB_TEST_WORK" --job-name="$name" \
    --nodes=1 --ntasks-per-node="$ntasks" --cpus-per-task=1 --gpus-per-node=0 --time=5 \
    "${options[@]+"${options[@]}"}" "$JOB_TEST_REPO/jobs/train.slurm" ||
    job_test_fail "sbatch rejected jobs/train.slurm"
}

job_test_log_file() { echo "$JOB_TEST_WORK/logs/$1_$2.out"; }

# job_test_show_log NAME JOBID: the job's output, for the test's own log.
job_test_show_log() {
  local log
  log=$(job_test_log_file "$1" "$2")
  echo "===== job $2 ($1) log: $log ====="
  cat "$log" 2>/dev/null || echo "(no log file)"
  echo "===== end of job $2 log ====="
}

# job_test_expect_completed NAME JOBID TIMEOUT: waits and requires COMPLETED, exit 0:0.
job_test_expect_completed() {
  local name=$1 job=$2 state exit_code started=$SECONDS
  state=$(mini_cluster_wait_job "$job" "$3") || true
  exit_code=$(mini_cluster_job_field "$job" ExitCode)
  mini_cluster_log "job $job ($name): $state, exit code $exit_code, after $((SECONDS - started))s"
  job_test_show_log "$name" "$job"
  [[ $state == COMPLETED && $exit_code == 0:0 ]] ||
    job_test_fail "job $job ($name) ended $state with exit code $exit_code, expected COMPLETED 0:0"
}

# job_test_wait_for_log NAME JOBID COUNT REGEX SECONDS: waits until the log
# has COUNT lines matching REGEX.
job_test_wait_for_log() {
  local deadline=$((SECONDS + $5)) found
  while :; do
    found=$(grep -cE "$4" "$(job_test_log_file "$1" "$2")" 2>/dev/null) || found=0
    ((found < $3)) || return 0
    if ((SECONDS >= deadline)); then
      job_test_show_log "$1" "$2"
      job_test_fail "job $2 ($1): no $3 line(s) matching '$4' in its log within $5 s"
    fi
    sleep 0.5
  done
}

# job_test_expect_in_log NAME JOBID COUNT REGEX: the log has at least COUNT matching lines.
job_test_expect_in_log() {
  local found
  found=$(grep -cE "$4" "$(job_test_log_file "$1" "$2")" 2>/dev/null) || found=0
  ((found >= $3)) || job_test_fail "job $2 ($1): expected at least $3 line(s) matching '$4' in its log, found $found"
}

# job_test_expect_file PATH: exists and is not empty.
job_test_expect_file() {
  [[ -s $1 ]] || job_test_fail "expected output $1 is missing or empty"
}
