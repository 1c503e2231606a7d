# ctest fixture `fuzz_build` (see fuzz_tests.cmake): configures and builds the fuzz project
# with clang into BINARY_DIR. Script mode: cmake -DSOURCE_DIR=... -DBINARY_DIR=...
#   -DCXX=<clang++> [-DGENERATOR=Ninja] [-DJOBS=2] -P build.cmake
foreach(var SOURCE_DIR BINARY_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "build.cmake: -D${var}= is required")
  endif()
endforeach()
if(NOT CXX)
  message(FATAL_ERROR "fuzz: no clang++ found; install clang and libclang-rt-14-dev "
                      "(docs/dependencies.md) to build the libFuzzer targets")
endif()
if(NOT JOBS)
  set(JOBS 2)
endif()
set(generator_args)
if(GENERATOR)
  set(generator_args -G ${GENERATOR})
endif()
if(NOT EXISTS ${BINARY_DIR}/CMakeCache.txt)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BINARY_DIR} ${generator_args}
            -DCMAKE_CXX_COMPILER=${CXX}
    RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "fuzz: configuring ${SOURCE_DIR} failed (${rc})")
  endif()
endif()
# Keep going past a target that does not compile, so the error list is complete.
set(keep_going)
if(GENERATOR MATCHES "Ninja")
  set(keep_going -- -k 0)
elseif(GENERATOR MATCHES "Makefiles")
  set(keep_going -- -k)
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BINARY_DIR} -j ${JOBS} ${keep_going}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fuzz: building ${BINARY_DIR} failed (${rc})")
endif()
