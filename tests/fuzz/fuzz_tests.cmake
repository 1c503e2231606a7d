# ctest label `fuzz`, included from tests/CMakeLists.txt. The fuzzers are a separate CMake
# project built with clang (tests/fuzz/CMakeLists.txt); the test `fuzz_build` configures and
# builds it into ${CMAKE_BINARY_DIR}/fuzz (a fixture), then each fuzz_<name> test replays
# every file of tests/fuzz/corpus/<target>/ (seeds and crash_* reproducers) and fuzzes for
# KSTACK_FUZZ_RUNS inputs from the fixed KSTACK_FUZZ_SEED (run.cmake): the same commit always
# gets the same verdict. Long random campaigns are scripts/fuzz.sh. docs/fuzzing.md.
set(KSTACK_FUZZ_RUNS 20000 CACHE STRING "Inputs each fuzzer tries under ctest -L fuzz")
set(KSTACK_FUZZ_SEED 1 CACHE STRING "libFuzzer -seed of the ctest fuzz runs")
find_program(KSTACK_FUZZ_CXX NAMES clang++ clang++-14)

set(_fuzz_source_dir ${CMAKE_CURRENT_LIST_DIR})
set(_fuzz_binary_dir ${CMAKE_BINARY_DIR}/fuzz)

add_test(NAME fuzz_build
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${_fuzz_source_dir} -DBINARY_DIR=${_fuzz_binary_dir}
          -DCXX=${KSTACK_FUZZ_CXX} -DGENERATOR=${CMAKE_GENERATOR} -DJOBS=2
          -P ${_fuzz_source_dir}/build.cmake)
set_tests_properties(fuzz_build PROPERTIES
  LABELS fuzz FIXTURES_SETUP kstack_fuzz_build TIMEOUT 1200)

file(GLOB _fuzz_sources CONFIGURE_DEPENDS ${_fuzz_source_dir}/fuzz_*.cpp)
foreach(_fuzz_source IN LISTS _fuzz_sources)
  get_filename_component(_fuzz_name ${_fuzz_source} NAME_WE)
  add_test(NAME ${_fuzz_name}
    COMMAND ${CMAKE_COMMAND} -DFUZZER=${_fuzz_binary_dir}/${_fuzz_name}
            -DSEEDS=${_fuzz_source_dir}/corpus/${_fuzz_name}
            -DDICT=${_fuzz_source_dir}/${_fuzz_name}.dict
            -DWORK=${_fuzz_binary_dir}/ctest/${_fuzz_name}
            -DRUNS=${KSTACK_FUZZ_RUNS} -DSEED=${KSTACK_FUZZ_SEED}
            -P ${_fuzz_source_dir}/run.cmake)
  # 20000 runs take 3-17 s per target on an idle core; the margin is for shared machines.
  set_tests_properties(${_fuzz_name} PROPERTIES
    LABELS fuzz FIXTURES_REQUIRED kstack_fuzz_build TIMEOUT 300)
endforeach()
