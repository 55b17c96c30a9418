# No program of the project may import std::filesystem: LibTorch's pip wheels
# export their own static copies of it, and a program that mixes those with
# the system's libstdc++ crashes (src/util/paths.hpp). Reads each file's
# undefined dynamic symbols with nm; fails naming the file and the symbols.
find_program(NM nm REQUIRED)
set(bad 0)
list(LENGTH FILES count)
if(count LESS 5)
  message(FATAL_ERROR "expected the project's programs in FILES, got ${count}: ${FILES}")
endif()
foreach(f ${FILES})
  execute_process(COMMAND ${NM} -D -C --undefined-only ${f} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm ${f} failed (${rc}): ${err}")
  endif()
  string(REGEX MATCHALL "[^\n]*std::filesystem[^\n]*" hits "${out}")
  if(hits)
    list(JOIN hits "\n" text)
    message(SEND_ERROR "${f} imports std::filesystem; use cifar::paths (src/util/paths.hpp):\n${text}")
    set(bad 1)
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "std::filesystem is imported (see above)")
endif()
message(STATUS "${count} programs checked: none imports std::filesystem")
