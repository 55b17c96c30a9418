# `cmake --install build/cpu --prefix P` and the packages CPack makes from it
# (docs/install.md): the programs, configs, job scripts, docs, licence and
# module files.
#
# The layout is fixed rather than GNUInstallDirs': an installed cifar_mpi finds
# its configs at <its folder>/../share/cifar_mpi/config (kInstalledConfigDir,
# src/config/run_config.hpp), the installed job scripts find the programs at
# ../../../bin, and the module files find the prefix from their own place.
install(TARGETS cifar_mpi cifar_pack cifar_eval allreduce_bench compare_models RUNTIME DESTINATION bin)
install(PROGRAMS tools/plot_metrics DESTINATION bin)
install(DIRECTORY config/ DESTINATION share/cifar_mpi/config FILES_MATCHING PATTERN "*.ini")
install(DIRECTORY jobs/ DESTINATION share/cifar_mpi/jobs USE_SOURCE_PERMISSIONS)
install(DIRECTORY docs/ DESTINATION share/doc/cifar_mpi)
install(FILES README.md LICENSE DESTINATION share/doc/cifar_mpi)

# Module files: Lua for Lmod in share/modulefiles, Tcl for Environment Modules
# (which Lmod reads too) in share/modules/modulefiles, Debian's default
# MODULEPATH of Environment Modules under /usr.
set(_lua ${PROJECT_BINARY_DIR}/modulefiles/cifar_mpi/${PROJECT_VERSION}.lua)
set(_tcl ${PROJECT_BINARY_DIR}/modules/modulefiles/cifar_mpi/${PROJECT_VERSION})
configure_file(${PROJECT_SOURCE_DIR}/cmake/modulefiles/cifar_mpi.lua.in ${_lua} @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/modulefiles/cifar_mpi.tcl.in ${_tcl} @ONLY)
install(FILES ${_lua} DESTINATION share/modulefiles/cifar_mpi)
install(FILES ${_tcl} DESTINATION share/modules/modulefiles/cifar_mpi)

# ---- CPack: cifar-mpi-<version>-Linux.tar.gz and cifar-mpi_<version>_<arch>.deb
# (`cpack --preset cpu`, or the `package` target).
set(CPACK_PACKAGE_NAME cifar-mpi)
set(CPACK_PACKAGE_VENDOR cifar_mpi)
set(CPACK_PACKAGE_CONTACT "cifar_mpi developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Data-parallel CIFAR-10 training in C++20 with MPI, NCCL and LibTorch")
set(CPACK_GENERATOR TGZ DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
# The licence: BSD-3-Clause, LibTorch's; installed as share/doc/cifar_mpi/LICENSE.
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
# The shared libraries' packages (libtorch, Open MPI, HDF5, Boost, ...) come
# from dpkg-shlibdeps (dpkg-dev); libraries no package owns (a CUDA toolkit's
# NCCL in /usr/local/cuda) have no entry and stay found through the RUNPATH.
# mpirun is a program, not a library: declared by hand.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "openmpi-bin")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-matplotlib, lmod | environment-modules")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "slurm-wlm, hdf5-tools")
include(CPack)
