#!/usr/bin/env bash
# install.prefix (fixture): `cmake --install` of the build tree into a
# temporary prefix puts the programs, configs, job scripts, docs and module
# files where docs/install.md says; the installed programs find their libraries.
# shellcheck source=tests/install/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

rm -rf "$PREFIX"
cmake --install "$BUILD_DIR" --prefix "$PREFIX" | tee "$WORK/install.log"
expect_install "$PREFIX"
for p in "${kPrograms[@]}"; do expect_libraries_found "$PREFIX/bin/$p"; done
# The module files are the project's own, with its version.
grep -q "Version: $VERSION" "$PREFIX/share/modulefiles/cifar_mpi/$VERSION.lua" || fail "Lua module file without its version"
head -n1 "$PREFIX/share/modules/modulefiles/cifar_mpi/$VERSION" | grep -q '^#%Module' || fail "Tcl module file without #%Module"
echo "PASS: installed into $PREFIX ($(grep -c '^-- Installing' "$WORK/install.log") files)"
