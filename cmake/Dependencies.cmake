# Finds every dependency and exposes each as an imported target:
#   MPI::MPI_CXX, HDF5::HDF5, Boost::program_options, torch, LibArchive::LibArchive,
#   and, when CUDA and NCCL are found, CUDA::cudart and cifar::nccl.
# Decides at configure time whether the NCCL communicator is compiled
# (CIFAR_HAVE_NCCL) and whether LibTorch itself has CUDA (CIFAR_TORCH_HAS_CUDA).

# ccache cannot cache compiles that use a precompiled header unless told that
# the header's macros and timestamps are safe to ignore; base_dir makes hits
# work across clones in different folders (CI builds a fresh clone).
if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache$")
  set(_launcher ${CMAKE_BINARY_DIR}/ccache-launcher.sh)
  file(WRITE ${_launcher}
       "#!/bin/sh\n"
       "export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime\n"
       "export CCACHE_BASEDIR=${CMAKE_SOURCE_DIR}\n"
       "exec ${CMAKE_CXX_COMPILER_LAUNCHER} \"$@\"\n")
  file(CHMOD ${_launcher} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${_launcher})
endif()

find_package(MPI REQUIRED COMPONENTS CXX)
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(Boost 1.71 REQUIRED COMPONENTS program_options)
find_package(LibArchive REQUIRED)
find_package(Threads REQUIRED)

# LibTorch's config pulls in its own CUDA detection for CUDA builds; it needs
# CUDA's language/toolkit to be discoverable, which a CUDA-enabled torch sets up.
find_package(Torch REQUIRED)
# TorchConfig puts compile flags (e.g. -D_GLIBCXX_USE_CXX11_ABI) in TORCH_CXX_FLAGS
# rather than on the target for some versions; apply them globally so that every
# object agrees on the ABI.
set(CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS} ${TORCH_CXX_FLAGS}")

set(CIFAR_TORCH_HAS_CUDA OFF)
find_library(CIFAR_C10_CUDA_LIBRARY c10_cuda PATHS "${TORCH_INSTALL_PREFIX}/lib" NO_DEFAULT_PATH)
if(CIFAR_C10_CUDA_LIBRARY)
  set(CIFAR_TORCH_HAS_CUDA ON)
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
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    # NCCL: NCCL_ROOT, the CUDA toolkit, the nvidia-nccl Python wheel, system paths.
    set(_nccl_hints $ENV{NCCL_ROOT} ${NCCL_ROOT} ${CUDAToolkit_LIBRARY_ROOT}
                    ${CUDAToolkit_TARGET_DIR})
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
    find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_nccl_hints} PATH_SUFFIXES lib lib64)
    if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
      add_library(cifar::nccl UNKNOWN IMPORTED)
      set_target_properties(cifar::nccl PROPERTIES
        IMPORTED_LOCATION "${NCCL_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}"
        INTERFACE_LINK_LIBRARIES CUDA::cudart)
      set(CIFAR_HAVE_NCCL ON)
      message(STATUS "NCCL: ${NCCL_LIBRARY} (headers ${NCCL_INCLUDE_DIR}), CUDA ${CUDAToolkit_VERSION}")
    else()
      message(STATUS "NCCL not found (set NCCL_ROOT): the NCCL communicator is a 'not compiled' stub")
    endif()
  else()
    message(STATUS "CUDA toolkit not found: the NCCL communicator is a 'not compiled' stub")
  endif()
endif()
