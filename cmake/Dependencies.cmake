# Finds every dependency and exposes each as an imported target:
#   MPI::MPI_CXX, HDF5::HDF5, Boost::program_options, torch, LibArchive::LibArchive,
#   and, when CUDA and NCCL are found, cifar::cudart and cifar::nccl.
# Decides at configure time whether the NCCL communicator is compiled
# (CIFAR_HAVE_NCCL) and whether LibTorch itself has CUDA (CIFAR_TORCH_HAS_CUDA).

# ccache cannot cache compiles that use a precompiled header unless told that
# the header's macros and timestamps are safe to ignore; base_dir makes hits
# work across clones in different folders (CI builds a fresh clone). With -g
# (the cpu-debug preset) ccache also hashes the working folder, which the debug
# information names: NOHASHDIR lets a fresh clone hit too (a hit's debug
# information then names the folder that compiled it first). clang writes the
# headers' timestamps into its PCH unless told not to, so every PCH differed
# and nothing that used it ever hit (ccache's "PRECOMPILED HEADERS").
# __FILE__ (the error macros of src/util/error.hpp, LibTorch's TORCH_CHECK)
# expands to the absolute path of a unity build's sources, which base_dir
# cannot rewrite: -fmacro-prefix-map makes it relative to the source folder
# (src/mpi/world.cpp), so another clone's compile, or EasyBuild's from its
# source tarball, hits too (ccache leaves the option out of its
# preprocessor-mode hash, where the expansion it makes is hashed instead).
if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache$")
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-fmacro-prefix-map=${CMAKE_SOURCE_DIR}/=>")
  set(_launcher ${CMAKE_BINARY_DIR}/ccache-launcher.sh)
  file(WRITE ${_launcher}
       "#!/bin/sh\n"
       "export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime\n"
       "export CCACHE_BASEDIR=${CMAKE_SOURCE_DIR}\n"
       "export CCACHE_NOHASHDIR=1\n"
       "exec ${CMAKE_CXX_COMPILER_LAUNCHER} \"$@\"\n")
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    add_compile_options("SHELL:-Xclang -fno-pch-timestamp")
  endif()
  file(CHMOD ${_launcher} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${_launcher})
endif()

find_package(MPI REQUIRED COMPONENTS CXX)
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(Boost 1.71 REQUIRED COMPONENTS program_options)
find_package(LibArchive REQUIRED)
find_package(Threads REQUIRED)

# CIFAR_TORCH_PYTHON: a python whose torch package supplies LibTorch. The `cuda`
# preset points it at .venv-torch/bin/python (tools/setup_torch.sh: PyPI's
# torch 2.15 cu132 with its nvidia-* wheels). Its torch.utils.cmake_prefix_path
# goes first on CMAKE_PREFIX_PATH, its nvidia.nccl first among the NCCL hints
# (the NCCL that its libtorch_cuda loads), and it becomes CIFAR_TEST_PYTHON's
# default, so the Python tests use that torch too.
set(CIFAR_TORCH_PYTHON "" CACHE FILEPATH
    "Python whose torch package provides LibTorch (empty: find LibTorch through CMAKE_PREFIX_PATH/Torch_DIR)")
set(_torch_py_nccl "")
if(CIFAR_TORCH_PYTHON)
  if(NOT EXISTS "${CIFAR_TORCH_PYTHON}")
    message(FATAL_ERROR "CIFAR_TORCH_PYTHON=${CIFAR_TORCH_PYTHON} does not exist: run tools/setup_torch.sh, "
                        "or configure with -DCIFAR_TORCH_PYTHON=<a python with torch> (or empty and Torch_DIR)")
  endif()
  execute_process(
    COMMAND ${CIFAR_TORCH_PYTHON} -c "import torch; print(torch.utils.cmake_prefix_path)"
    OUTPUT_VARIABLE _torch_py_prefix OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0 OR NOT _torch_py_prefix)
    message(FATAL_ERROR "${CIFAR_TORCH_PYTHON} cannot import torch: run tools/setup_torch.sh")
  endif()
  # The torch package folder too: TorchConfig finds libtorch.so with a plain
  # find_library(... PATHS <torch>/lib), which searches the system folders first
  # and would find Debian's LibTorch 1.13 there.
  get_filename_component(_torch_py_root "${_torch_py_prefix}/../.." ABSOLUTE)
  list(PREPEND CMAKE_PREFIX_PATH ${_torch_py_prefix} ${_torch_py_root})
  execute_process(
    COMMAND ${CIFAR_TORCH_PYTHON} -c "import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])"
    OUTPUT_VARIABLE _torch_py_nccl OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  set(CIFAR_TEST_PYTHON ${CIFAR_TORCH_PYTHON} CACHE FILEPATH
      "Python with torch, h5py and matplotlib for the tests that use Python")
  message(STATUS "LibTorch from ${CIFAR_TORCH_PYTHON}: ${_torch_py_prefix}")
endif()

# The CUDA runtime that CIFAR_TORCH_PYTHON's torch loads: its nvidia-* wheels'
# libcudart and headers (nvidia/cu13/ for CUDA 13, nvidia/<component>/ for
# CUDA 12). The program links that libcudart and compiles against those
# headers, never a system toolkit's beside them: a CUDA 13 toolkit's
# libcudart.so.13 next to the cuda12 flavour's libcudart.so.12 would put two
# runtimes in one process, and CUDA 13's headers do not describe CUDA 12's
# structures. LibTorch's own CUDA detection (Caffe2/public/cuda.cmake: FindCUDA,
# enable_language(CUDA), an nvcc of the same version, which PyPI's CUDA 12
# wheels do not carry) is then skipped: it returns at once when torch::cudart
# exists, the one CUDA target its exported targets name. Nothing here compiles
# CUDA code, so no nvcc is needed.
if(CIFAR_TORCH_PYTHON)
  execute_process(
    COMMAND ${CIFAR_TORCH_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/torch_cuda_runtime.py
    OUTPUT_VARIABLE _wheel_cuda OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${CIFAR_TORCH_PYTHON}: cannot list its torch's CUDA runtime (above); "
                        "rerun tools/setup_torch.sh")
  endif()
  if(_wheel_cuda)
    list(POP_FRONT _wheel_cuda CIFAR_TORCH_CUDA_VERSION _wheel_cudart)
    add_library(torch::cudart INTERFACE IMPORTED)
    set_target_properties(torch::cudart PROPERTIES
      INTERFACE_LINK_LIBRARIES "${_wheel_cudart}"
      INTERFACE_INCLUDE_DIRECTORIES "${_wheel_cuda}")
    message(STATUS "CUDA ${CIFAR_TORCH_CUDA_VERSION} runtime from the wheels: ${_wheel_cudart}")
    # The wheels' runtime and NCCL ahead of LD_LIBRARY_PATH: a site's
    # `module load cuda/12.x` puts an older libcudart.so.12 or libnccl.so.2
    # there, and the loader searches LD_LIBRARY_PATH before an executable's
    # DT_RUNPATH (the linker's default) but after its DT_RPATH. The programs
    # need both libraries directly, so they load from the wheels before any
    # library that needs them (libtorch_cuda.so) looks for them.
    add_link_options(LINKER:--disable-new-dtags)
  endif()
endif()
find_package(Torch REQUIRED)
include(TorchRange)
# TorchConfig puts compile flags (e.g. -D_GLIBCXX_USE_CXX11_ABI) in TORCH_CXX_FLAGS
# rather than on the target for some versions; apply them globally so that every
# object agrees on the ABI.
set(CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS} ${TORCH_CXX_FLAGS}")
cifar_cxx_standard_for_torch()

set(CIFAR_TORCH_HAS_CUDA OFF)
find_library(CIFAR_C10_CUDA_LIBRARY c10_cuda PATHS "${TORCH_INSTALL_PREFIX}/lib" NO_DEFAULT_PATH)
if(CIFAR_C10_CUDA_LIBRARY)
  set(CIFAR_TORCH_HAS_CUDA ON)
endif()
# The `cuda` preset sets this, so that it never builds quietly against a CPU
# LibTorch (Debian's is always found).
option(CIFAR_REQUIRE_TORCH_CUDA "Fail unless LibTorch has CUDA" OFF)
if(CIFAR_REQUIRE_TORCH_CUDA AND NOT CIFAR_TORCH_HAS_CUDA)
  message(FATAL_ERROR "LibTorch ${Torch_VERSION} at ${TORCH_INSTALL_PREFIX} has no CUDA "
                      "(CIFAR_REQUIRE_TORCH_CUDA): run tools/setup_torch.sh, or point "
                      "CIFAR_TORCH_PYTHON or Torch_DIR at a CUDA LibTorch")
endif()

# HDF5's FindHDF5 provides HDF5::HDF5 from CMake 3.19; older CMake only sets variables.
if(NOT TARGET HDF5::HDF5)
  add_library(HDF5::HDF5 INTERFACE IMPORTED)
  target_include_directories(HDF5::HDF5 INTERFACE ${HDF5_INCLUDE_DIRS})
  target_link_libraries(HDF5::HDF5 INTERFACE ${HDF5_LIBRARIES})
  target_compile_definitions(HDF5::HDF5 INTERFACE ${HDF5_DEFINITIONS})
endif()

# ---- CUDA runtime + NCCL (optional) -----------------------------------------
set(CIFAR_HAVE_NCCL OFF)
if(CIFAR_WITH_NCCL)
  # The CUDA runtime: the wheels' (above), else a CUDA toolkit's.
  set(_nccl_hints $ENV{NCCL_ROOT} ${NCCL_ROOT} ${_torch_py_nccl})
  # CIFAR_CUDART_LIBRARY: the libcudart the programs link, which the start-up
  # check names as the build's (src/gpu/CMakeLists.txt).
  if(TARGET torch::cudart AND CIFAR_TORCH_CUDA_VERSION)
    add_library(cifar::cudart INTERFACE IMPORTED)
    target_link_libraries(cifar::cudart INTERFACE torch::cudart)
    set(CIFAR_CUDART_LIBRARY ${_wheel_cudart})
  else()
    find_package(CUDAToolkit QUIET)
    if(CUDAToolkit_FOUND)
      add_library(cifar::cudart INTERFACE IMPORTED)
      target_link_libraries(cifar::cudart INTERFACE CUDA::cudart)
      set(CIFAR_TORCH_CUDA_VERSION ${CUDAToolkit_VERSION})
      set(CIFAR_CUDART_LIBRARY ${CUDA_cudart_LIBRARY})
      list(APPEND _nccl_hints ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR})
    endif()
  endif()
  if(TARGET cifar::cudart)
    # NCCL: NCCL_ROOT, CIFAR_TORCH_PYTHON's nvidia-nccl wheel, the CUDA toolkit,
    # another Python's nvidia-nccl wheel, system paths.
    find_package(Python3 QUIET COMPONENTS Interpreter)
    if(Python3_Interpreter_FOUND)
      execute_process(
        COMMAND ${Python3_EXECUTABLE} -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) if nvidia.nccl.__file__ else list(nvidia.nccl.__path__)[0])"
        OUTPUT_VARIABLE _nccl_py OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      if(_nccl_py)
        list(APPEND _nccl_hints ${_nccl_py})
      endif()
    endif()
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} PATH_SUFFIXES include)
    # NAMES_PER_DIR: the first hint wins even where it has only libnccl.so.2 (the wheel).
    find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR HINTS ${_nccl_hints} PATH_SUFFIXES lib lib64)
    if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
      add_library(cifar::nccl UNKNOWN IMPORTED)
      set_target_properties(cifar::nccl PROPERTIES
        IMPORTED_LOCATION "${NCCL_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}"
        INTERFACE_LINK_LIBRARIES cifar::cudart)
      set(CIFAR_HAVE_NCCL ON)
      message(STATUS "NCCL: ${NCCL_LIBRARY} (headers ${NCCL_INCLUDE_DIR}), CUDA ${CIFAR_TORCH_CUDA_VERSION}")
    else()
      message(STATUS "NCCL not found (set NCCL_ROOT): the NCCL communicator is a 'not compiled' stub")
    endif()
  else()
    message(STATUS "CUDA toolkit not found: the NCCL communicator is a 'not compiled' stub")
  endif()
endif()
