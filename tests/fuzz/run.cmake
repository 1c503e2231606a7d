# Runs one libFuzzer target for SECONDS on its checked-in seeds; fails on any finding.
#   cmake -DFUZZER=<binary> -DSEEDS=<corpus/target dir> -DWORK=<dir> -DSECONDS=20
#         [-DDICT=<file>] -P run.cmake
# New inputs go to WORK/corpus (kept between runs, so coverage accumulates), findings to
# WORK/crash-*, leak-*, timeout-*, oom-*; reproduce one with `<binary> <file>`.
foreach(var FUZZER SEEDS WORK SECONDS)
  if(NOT ${var})
    message(FATAL_ERROR "run.cmake: -D${var}= is required")
  endif()
endforeach()
if(NOT EXISTS ${FUZZER})
  message(FATAL_ERROR "fuzz: ${FUZZER} does not exist (the fuzz_build test builds it)")
endif()
file(MAKE_DIRECTORY ${WORK}/corpus)
set(dict_arg)
if(DICT AND EXISTS ${DICT})
  set(dict_arg -dict=${DICT})
endif()
# -timeout: an input running 10 s is a hang; -rss_limit_mb: 2 GB, the machines are shared.
# stdin is /dev/null so that nothing a target does can wait on a terminal.
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048
          -print_final_stats=1 -artifact_prefix=${WORK}/ ${dict_arg} ${WORK}/corpus ${SEEDS}
  INPUT_FILE /dev/null
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(GLOB findings ${WORK}/crash-* ${WORK}/leak-* ${WORK}/timeout-* ${WORK}/oom-*
       ${WORK}/slow-unit-*)
  list(JOIN findings "\n  " listed)
  message(FATAL_ERROR "fuzz: ${FUZZER} exited with ${rc}. Reproducers:\n  ${listed}\n"
                      "Reproduce: ${FUZZER} <file>")
endif()
