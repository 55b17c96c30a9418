# The project's compiler warnings, in one place: the INTERFACE target
# cifar_warnings, linked PRIVATE by cifar_core and, through cifar_link_core()
# (src/CMakeLists.txt), by every program, tool, benchmark and test, so that
# all of them compile with the same flags (which also keeps the precompiled
# header that they share from cifar_core valid for each).
#
# -Wno-unused-parameter: overrides of the communicator, dataset and model
# interfaces often ignore a parameter that other implementations use.
# CIFAR_WERROR=ON (CI's tools/test.sh --all) makes every warning an error.
# Third-party headers (LibTorch, MPI, HDF5, Boost, GoogleTest) come from
# imported targets, whose include folders CMake passes as -isystem: their
# warnings are not reported, so -Werror applies to the project's code only.
option(CIFAR_WERROR "Treat compiler warnings as errors (-Werror)" OFF)

add_library(cifar_warnings INTERFACE)
target_compile_options(cifar_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${CIFAR_WERROR}>>:-Werror>)
