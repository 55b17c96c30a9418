# The LibTorch versions cifar_mpi builds and is tested with, checked right
# after find_package(Torch): a LibTorch outside them, or one whose CUDA
# targets name a target nobody defines, stops the configure with one message
# instead of failing in its headers, at generate time or at run time.
#
# The range is what CI builds: Debian 12's LibTorch 1.13 (`cpu`), PyPI's
# 2.10 cu128 (`cuda12`, the last CUDA 12 torch on PyPI) and 2.15 cu132
# (`cuda`). CIFAR_TORCH_ANY_VERSION=ON skips the range for a user who wants to
# try another LibTorch anyway (the CUDA target check still applies).
set(CIFAR_TORCH_MIN 1.13)
set(CIFAR_TORCH_MAX 2.15)
option(CIFAR_TORCH_ANY_VERSION "Build against a LibTorch outside the tested range ${CIFAR_TORCH_MIN}-${CIFAR_TORCH_MAX}" OFF)

# The major.minor of Torch_VERSION: patch releases keep their minor's API.
string(REGEX MATCH "^[0-9]+\\.[0-9]+" _torch_minor "${Torch_VERSION}")
set(_where "LibTorch ${Torch_VERSION} (${Torch_DIR})")
set(_pins "Debian's libtorch-dev 1.13 (cpu preset), tools/setup_torch.sh cuda12 (torch 2.10, cuda12 preset) "
          "or tools/setup_torch.sh (torch 2.15, cuda preset)")
string(JOIN "" _pins ${_pins})
if(NOT _torch_minor)
  message(FATAL_ERROR "${_where} does not say its version (TorchConfigVersion.cmake): use ${_pins}")
endif()
if(NOT CIFAR_TORCH_ANY_VERSION AND (_torch_minor VERSION_LESS CIFAR_TORCH_MIN OR _torch_minor VERSION_GREATER CIFAR_TORCH_MAX))
  message(FATAL_ERROR "${_where} is outside the range cifar_mpi is tested with, ${CIFAR_TORCH_MIN} to "
                      "${CIFAR_TORCH_MAX}: use ${_pins}; or configure with -DCIFAR_TORCH_ANY_VERSION=ON to try it")
endif()

# LibTorch's targets name CUDA targets (torch::cudart, in older releases also
# torch::nvtoolsext, ...) that its cuda.cmake defines, or that
# cmake/Dependencies.cmake stands in for (torch::cudart only). One that
# nobody defined would fail at generate time with "target not found".
set(_missing "")
foreach(_target torch torch_library torch_cuda torch_cuda_library torch_cpu c10_cuda)
  if(NOT TARGET ${_target})
    continue()
  endif()
  get_target_property(_links ${_target} INTERFACE_LINK_LIBRARIES)
  foreach(_link IN LISTS _links)
    if(_link MATCHES "^torch::" AND NOT TARGET ${_link})
      list(APPEND _missing ${_link})
    endif()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES _missing)
if(_missing)
  list(JOIN _missing ", " _missing)
  message(FATAL_ERROR "${_where} links CUDA targets that are not defined here (${_missing}): its CUDA "
                      "set-up is not one cifar_mpi's CUDA flavours stand in for; use ${_pins}")
endif()
