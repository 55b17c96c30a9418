# Multi-host tests on one machine: a simulated cluster of network namespaces
# (dev/netns) is built once by the fixture test multinode.setup and removed
# by multinode.cleanup, which ctest runs even when a test in between failed.
# All multinode tests share one RESOURCE_LOCK, so they never run at the same
# time as each other or as the set-up/clean-up. They need root: without it the
# set-up fails with the reason and every test that needs it fails too.
#
# Included by tests/CMakeLists.txt before the test areas, so that any area can
# register a test that runs across the simulated hosts:
#   cifar_add_multinode_test(<name> RANKS_PER_HOST <n> [HOSTS <h>] [TIMEOUT <s>]
#                            [ENVIRONMENT <VAR=value>...] COMMAND <program> <args...>)
# runs `dev/netns/run_across_hosts.sh --hosts h n <program> <args...>`;
# HOSTS defaults to 2, at most CIFAR_NETNS_HOSTS.

set(CIFAR_NETNS_DIR ${PROJECT_SOURCE_DIR}/dev/netns)
set(CIFAR_NETNS_HOSTS 3)  # hosts the fixture builds; tests use the first HOSTS
set(CIFAR_NETNS_FIXTURE netns_cluster)
set(CIFAR_NETNS_LOCK cifar_netns)

add_test(NAME multinode.setup COMMAND ${CIFAR_NETNS_DIR}/netns_up.sh ${CIFAR_NETNS_HOSTS})
set_tests_properties(multinode.setup PROPERTIES
  FIXTURES_SETUP ${CIFAR_NETNS_FIXTURE} RESOURCE_LOCK ${CIFAR_NETNS_LOCK} LABELS multinode TIMEOUT 60)
add_test(NAME multinode.cleanup COMMAND ${CIFAR_NETNS_DIR}/netns_down.sh)
set_tests_properties(multinode.cleanup PROPERTIES
  FIXTURES_CLEANUP ${CIFAR_NETNS_FIXTURE} RESOURCE_LOCK ${CIFAR_NETNS_LOCK} LABELS multinode TIMEOUT 60)

# Properties every test on the simulated cluster needs; `environment` is a
# list of VAR=value.
function(cifar_multinode_test_properties name ranks timeout environment)
  set_tests_properties(${name} PROPERTIES
    FIXTURES_REQUIRED ${CIFAR_NETNS_FIXTURE} RESOURCE_LOCK ${CIFAR_NETNS_LOCK}
    LABELS multinode PROCESSORS ${ranks} TIMEOUT ${timeout} ENVIRONMENT "${environment}")
endfunction()

function(cifar_add_multinode_test name)
  cmake_parse_arguments(ARG "" "RANKS_PER_HOST;HOSTS;TIMEOUT" "ENVIRONMENT;COMMAND" ${ARGN})
  if(NOT ARG_RANKS_PER_HOST OR NOT ARG_COMMAND)
    message(FATAL_ERROR "cifar_add_multinode_test(${name}): RANKS_PER_HOST and COMMAND are required")
  endif()
  if(NOT ARG_HOSTS)
    set(ARG_HOSTS 2)
  endif()
  if(ARG_HOSTS GREATER CIFAR_NETNS_HOSTS)
    message(FATAL_ERROR "cifar_add_multinode_test(${name}): HOSTS ${ARG_HOSTS} > the ${CIFAR_NETNS_HOSTS} simulated hosts")
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_test(NAME ${name}
           COMMAND ${CIFAR_NETNS_DIR}/run_across_hosts.sh --hosts ${ARG_HOSTS} ${ARG_RANKS_PER_HOST} ${ARG_COMMAND})
  math(EXPR ranks "${ARG_HOSTS} * ${ARG_RANKS_PER_HOST}")
  cifar_multinode_test_properties(${name} ${ranks} ${ARG_TIMEOUT} "${CIFAR_MPI_ENV};${ARG_ENVIRONMENT}")
endfunction()
