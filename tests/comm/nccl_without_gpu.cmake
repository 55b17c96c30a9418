# `mpirun -np 2 cifar_mpi --backend nccl` on a machine without a GPU must exit
# non-zero within seconds with one line that suggests --backend mpi.
execute_process(
  COMMAND ${MPIEXEC} --allow-run-as-root --oversubscribe -np 2 ${PROGRAM} --backend nccl
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 30)
message(STATUS "exit=${rc}\n${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "expected a non-zero exit")
endif()
# A CMake list splits at ';', which the message may hold ("... at configure
# time; set NCCL_ROOT ..." where NCCL was not compiled in): count lines, not pieces.
string(REPLACE ";" "," err_lines "${err}")
string(REGEX MATCHALL "error: [^\n]*--backend mpi" reasons "${err_lines}")
list(LENGTH reasons n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected exactly one error line suggesting --backend mpi, got ${n}")
endif()
