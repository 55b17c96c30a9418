#!/bin/sh
# containers/image_setup.sh — the steps every image's Containerfile runs as
# root while it is built (copied into the build context by tools/build_image.sh):
#   image_setup.sh packages FILE [REQUIREMENTS]
#                                 install the packages FILE lists that the base
#                                 lacks (none with tools/build_image.sh's base),
#                                 pick the pthread OpenBLAS where installed, and
#                                 if REQUIREMENTS is not empty, install those
#                                 wheels into /opt/torch-venv (pip, --find-links
#                                 /wheels) and make their libraries known to the
#                                 loader (the programs' RUNPATH names the build
#                                 host's venv)
#   image_setup.sh finish         the user cifar (uid 1000), /data and /runs, and
#                                 the image's MPI versions for the job scripts'
#                                 start-up check (jobs/cifar_common.sh)
set -eu
case $1 in
  packages)
    missing=
    # shellcheck disable=SC2013  # the list is one package name per word
    for p in $(sed 's/#.*//' "$2"); do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
    done
    if [ -n "$missing" ]; then
      apt-get update -qq
      # shellcheck disable=SC2086  # one word per package
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
      apt-get clean
      rm -rf /var/lib/apt/lists/*
    fi
    # LibTorch's BLAS: apt may have chosen the reference BLAS (~1.7x slower).
    for alt in libblas.so.3-x86_64-linux-gnu liblapack.so.3-x86_64-linux-gnu; do
      t=$(update-alternatives --list "$alt" 2>/dev/null | grep openblas-pthread | head -n1 || true)
      [ -z "$t" ] || update-alternatives --set "$alt" "$t" >/dev/null
    done
    if [ -s "${3:-/dev/null}" ]; then
      python3 -m venv /opt/torch-venv
      # Offline from /wheels when it holds wheels (every pin is a wheel there:
      # tools/setup_torch.sh fills it so), else from the package index.
      if ls /wheels/*.whl >/dev/null 2>&1; then source_opts="--no-index --find-links /wheels"; else source_opts=; fi
      # shellcheck disable=SC2086  # the options are separate words
      /opt/torch-venv/bin/pip install --no-cache-dir --no-deps $source_opts -r "$3"
      site=$(/opt/torch-venv/bin/python -c 'import site; print(site.getsitepackages()[0])')
      { echo "$site/torch/lib"; ls -d "$site"/nvidia/*/lib; } >/etc/ld.so.conf.d/torch-venv.conf
      ldconfig
    fi
    ;;
  finish)
    useradd --create-home --uid 1000 --shell /bin/bash cifar
    mkdir -p /data /runs
    chown cifar:cifar /runs
    # A login shell (bash -l, as `docker exec -it NAME bash -l` gives) resets
    # PATH in /etc/profile: the image's programs are put back on it.
    # shellcheck disable=SC2016  # $PATH is the login shell's, expanded there
    printf '%s\n' 'export PATH=/opt/cifar_mpi/bin:/opt/torch-venv/bin:$PATH' >/etc/profile.d/cifar_mpi.sh
    printf 'openmpi %s\npmix %s\n' "$(dpkg-query -W -f='${Version}' libopenmpi3 | sed 's/-.*//')" \
      "$(dpkg-query -W -f='${Version}' libpmix2 | sed 's/-.*//')" >/opt/cifar_mpi/share/cifar_mpi/image-mpi.txt
    ;;
  *)
    echo "image_setup.sh: packages FILE | finish" >&2
    exit 2
    ;;
esac
