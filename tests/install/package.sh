#!/usr/bin/env bash
# install.package: CPack makes cifar-mpi-<version>-Linux.tar.gz and
# cifar-mpi_<version>_<arch>.deb from the build tree.
#   .deb: `dpkg-deb --info` declares the runtime packages (LibTorch, Open MPI
#         and its mpirun, HDF5, Boost, libarchive), `--contents` holds the
#         installed layout under /usr, `apt-get install --simulate` resolves
#         its dependencies here; unpacked into a throw-away root with
#         `dpkg-deb -x`, its cifar_mpi trains a few steps from another folder
#         with --config default, found next to the unpacked program.
#   .tar.gz: the same layout under one top folder; unpacked, its cifar_mpi
#         passes --check-env.
# shellcheck source=tests/install/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$WORK"

cpack --config "$BUILD_DIR/CPackConfig.cmake" -B "$WORK/packages" | tee cpack.log
debs=("$WORK"/packages/cifar-mpi_"$VERSION"_*.deb)
deb=${debs[0]}
tgz=$WORK/packages/cifar-mpi-$VERSION-Linux.tar.gz
[[ -f $deb && -f $tgz ]] || fail "cpack made no .deb or .tar.gz: $(ls "$WORK/packages")"

echo "== $deb"
dpkg-deb --info "$deb" | tee info.txt
expect info.txt '^ Package: cifar-mpi$'
expect info.txt "^ Version: $VERSION$"
depends=$(dpkg-deb --field "$deb" Depends)
for package in libtorch1.13 libopenmpi3 openmpi-bin libhdf5-103-1 libboost-program-options1.74.0 libarchive13 \
  libc6 libstdc++6; do
  [[ ", $depends," == *", $package"[\ ,]* ]] || fail "Depends lacks $package: $depends"
done
dpkg-deb --contents "$deb" | tee contents.txt
for f in "${kInstalledFiles[@]}"; do
  grep -Eq " \./usr/$f\$" contents.txt || fail "the .deb lacks /usr/$f"
done
# What `apt-get install ./cifar-mpi_*.deb` would do here: its dependencies resolve.
apt-get install --simulate --no-install-recommends "$deb" | tee apt.txt
expect apt.txt '^Inst cifar-mpi '

echo "== the .deb unpacked into a throw-away root"
root=$WORK/root
dpkg-deb -x "$deb" "$root"
expect_install "$root/usr"
for p in "${kPrograms[@]}"; do expect_libraries_found "$root/usr/bin/$p"; done
mkdir -p "$WORK/run/data" && cd "$WORK/run"
"$root/usr/bin/cifar_pack" --synthetic 256 --test-count 64 --seed 1 --output data/cifar10.h5
mpi 2 "$root/usr/bin/cifar_mpi" --config default --epochs 1 --max-steps 2 --batch-size 16 --log-every 1 \
  --eval false | tee train.log
expect train.log "^configuration \(file $root/usr/share/cifar_mpi/config/default.ini, command line wins\):$"
expect train.log '^Epoch: 0 \| Batch: 1/'
[[ -s ddp_model.pth ]] || fail "no ddp_model.pth in $PWD"

echo "== $tgz"
tar -tzf "$tgz" >tgz.txt
for f in "${kInstalledFiles[@]}"; do
  grep -Eq "^cifar-mpi-$VERSION-Linux/$f\$" tgz.txt || fail "the .tar.gz lacks $f"
done
mkdir -p "$WORK/tgz"
tar -xzf "$tgz" -C "$WORK/tgz"
expect_install "$WORK/tgz/cifar-mpi-$VERSION-Linux"
"$WORK/tgz/cifar-mpi-$VERSION-Linux/bin/cifar_mpi" --check-env --device cpu | tee check.log
expect check.log '^ready to train$'
echo "PASS: $(basename "$deb") (Depends: $depends) and $(basename "$tgz") install and run"
