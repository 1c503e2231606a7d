# The gating run of one libFuzzer target (ctest label `fuzz`): deterministic, so the same
# commit always gets the same verdict.
#   cmake -DFUZZER=<binary> -DSEEDS=<corpus/target dir> -DWORK=<dir> -DRUNS=<n> -DSEED=<n>
#         [-DDICT=<file>] -P run.cmake
# 1. Replays every checked-in input of SEEDS (seeds and every crasher ever found, crash_*),
#    each run once.
# 2. Fuzzes for exactly RUNS inputs from the fixed SEED, starting from those files only.
# Nothing from earlier runs is read: WORK is emptied first and only receives the reproducers
# of this run's findings (crash-*, leak-*, timeout-*, oom-*); new inputs are not kept.
# Address-space randomization is turned off for the fuzzer (setarch -R): Boost.JSON salts its
# object hashing with addresses, which made coverage, and so the inputs tried, differ from
# one run to the next. Long random-seed campaigns: scripts/fuzz.sh (docs/fuzzing.md).
foreach(var FUZZER SEEDS WORK RUNS SEED)
  if("${${var}}" STREQUAL "")
    message(FATAL_ERROR "run.cmake: -D${var}= is required")
  endif()
endforeach()
if(NOT EXISTS ${FUZZER})
  message(FATAL_ERROR "fuzz: ${FUZZER} does not exist (the fuzz_build test builds it)")
endif()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

file(GLOB inputs LIST_DIRECTORIES false ${SEEDS}/*)
list(SORT inputs)
if(NOT inputs)
  message(FATAL_ERROR "fuzz: no inputs in ${SEEDS}")
endif()

set(no_aslr)
find_program(SETARCH setarch)
if(SETARCH)
  execute_process(COMMAND ${SETARCH} -R true RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  if(rc EQUAL 0)
    set(no_aslr ${SETARCH} -R)
  endif()
endif()
if(NOT no_aslr)
  message(WARNING "fuzz: cannot turn off address-space randomization (setarch -R); the "
                  "fuzzing part may try different inputs from one run to the next")
endif()

# -timeout: an input running 10 s is a hang; -rss_limit_mb: 2 GB, the machines are shared.
# stdin is /dev/null so that nothing a target does can wait on a terminal.
set(limits -timeout=10 -rss_limit_mb=2048)

function(fail_with_findings what rc)
  file(GLOB findings ${WORK}/crash-* ${WORK}/leak-* ${WORK}/timeout-* ${WORK}/oom-*)
  list(JOIN findings "\n  " listed)
  message(FATAL_ERROR "fuzz: ${what}: ${FUZZER} exited with ${rc}. Reproducers:\n  ${listed}\n"
                      "Reproduce: ${FUZZER} <file>; once fixed, add it to ${SEEDS}/ as "
                      "crash_<what it is> (docs/fuzzing.md)")
endfunction()

list(LENGTH inputs count)
message(STATUS "fuzz: replaying the ${count} inputs of ${SEEDS}")
execute_process(
  COMMAND ${no_aslr} ${FUZZER} ${limits} -artifact_prefix=${WORK}/ ${inputs}
  INPUT_FILE /dev/null
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  fail_with_findings("a checked-in input fails" ${rc})
endif()

message(STATUS "fuzz: ${RUNS} runs from seed ${SEED}")
list(JOIN inputs "," seed_inputs)
file(WRITE ${WORK}/seed_inputs "${seed_inputs}")
set(dict_arg)
if(DICT AND EXISTS ${DICT})
  set(dict_arg -dict=${DICT})
endif()
# -seed_inputs (not a corpus directory): the files in this sorted order, not the directory's.
# -reload=0: no rereading of a corpus directory on a timer.
execute_process(
  COMMAND ${no_aslr} ${FUZZER} -seed=${SEED} -runs=${RUNS} ${limits} -reload=0
          -print_final_stats=1 -artifact_prefix=${WORK}/ ${dict_arg}
          -seed_inputs=@${WORK}/seed_inputs
  INPUT_FILE /dev/null
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  fail_with_findings("fuzzing from seed ${SEED} found a defect" ${rc})
endif()
