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
