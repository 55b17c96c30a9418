# C++20 for every target, and a compiler that really compiles it.
#
# LibTorch 2.14 and newer refuse anything older (ATen/ATen.h: "#error C++20
# or later compatible compiler is required"), and one standard for every
# LibTorch keeps one code base. GCC 10 accepts -std=c++20 but reports
# __cplusplus 201709L and lacks parts of the library, so the refusal comes
# here, at configure time, with the compiler named, instead of deep inside
# LibTorch's headers.
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)

# The oldest compilers known to build C++20 code with LibTorch's headers.
set(CIFAR_MIN_GCC 11)
set(CIFAR_MIN_CLANG 14)

set(_cxx "${CMAKE_CXX_COMPILER} (${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION})")
set(_fix "cifar_mpi needs C++20: GCC ${CIFAR_MIN_GCC}+ or clang ${CIFAR_MIN_CLANG}+ "
         "(e.g. module load gcc/12, or -DCMAKE_CXX_COMPILER=g++-12, in a new build folder)")
string(JOIN "" _fix ${_fix})
if((CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS CIFAR_MIN_GCC)
   OR (CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS CIFAR_MIN_CLANG))
  message(FATAL_ERROR "The C++ compiler ${_cxx} is too old: ${_fix}")
endif()
# Any other compiler: it must say C++20 itself, as LibTorch checks it.
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_QUIET ON)
check_cxx_source_compiles("
#if __cplusplus < 202002L
#error not C++20
#endif
int main() { return 0; }" CIFAR_CXX20_WORKS)
unset(CMAKE_REQUIRED_QUIET)
if(NOT CIFAR_CXX20_WORKS)
  message(FATAL_ERROR "The C++ compiler ${_cxx} does not compile C++20 (__cplusplus < 202002L with "
                      "${CMAKE_CXX20_STANDARD_COMPILE_OPTION}): ${_fix}")
endif()

# cifar_cxx_standard_for_torch(), right after find_package(Torch): a LibTorch
# before 2.14 builds as C++17 and, with most compilers, as C++20. Where this
# compiler cannot compile its headers as C++20 (clang 14 with libstdc++ 12
# and LibTorch 1.13: C++20's constexpr std::vector instantiates its
# destructor where ATen/core/List.h holds a std::vector of the still
# incomplete c10::IValue), the project builds as C++17, for which its code is
# written too. From LibTorch 2.14 on, C++20 is required and stays.
function(cifar_cxx_standard_for_torch)
  if(Torch_VERSION VERSION_GREATER_EQUAL 2.14)
    return()
  endif()
  # Asked once per compiler and LibTorch (about 10 s: torch.h compiled once).
  set(_key "${CMAKE_CXX_COMPILER} ${CMAKE_CXX_COMPILER_VERSION} ${Torch_DIR} ${Torch_VERSION}")
  if(NOT "${CIFAR_TORCH_CXX20_KEY}" STREQUAL "${_key}")
    set(_probe ${CMAKE_BINARY_DIR}/CMakeFiles/cifar_torch_cxx20.cpp)
    file(WRITE ${_probe} "#include <torch/torch.h>\nint main() { return 0; }\n")
    set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)  # compile only: LibTorch's headers are the question
    message(STATUS "cifar_mpi: does ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION} compile LibTorch "
                   "${Torch_VERSION}'s headers as C++20?")
    # LibTorch's include folders alone (TorchConfig's TORCH_INCLUDE_DIRS), not
    # its targets: their link interfaces name targets (protobuf::libprotobuf)
    # that only the calling project may tolerate.
    try_compile(_works ${CMAKE_BINARY_DIR}/CMakeFiles/cifar_torch_cxx20 SOURCES ${_probe}
                CMAKE_FLAGS "-DINCLUDE_DIRECTORIES=${TORCH_INCLUDE_DIRS}"
                CXX_STANDARD 20 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
                OUTPUT_VARIABLE _output)
    set(CIFAR_TORCH_HEADERS_CXX20 ${_works} CACHE INTERNAL "This compiler compiles LibTorch's headers as C++20")
    set(CIFAR_TORCH_CXX20_KEY "${_key}" CACHE INTERNAL "The compiler and LibTorch CIFAR_TORCH_HEADERS_CXX20 is of")
    if(NOT _works)
      string(REGEX MATCH "[^\n]*error:[^\n]*" _first_error "${_output}")
      set(CIFAR_TORCH_CXX20_ERROR "${_first_error}" CACHE INTERNAL "Why not")
    endif()
  endif()
  if(NOT CIFAR_TORCH_HEADERS_CXX20)
    set(CMAKE_CXX_STANDARD 17 PARENT_SCOPE)
    message(STATUS "cifar_mpi: C++17: ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION} cannot compile LibTorch "
                   "${Torch_VERSION}'s headers as C++20 (${CIFAR_TORCH_CXX20_ERROR})")
  endif()
endfunction()
