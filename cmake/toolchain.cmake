# Build speed on 2 cores: ccache (shared across fresh build folders) and lld.
find_program(KSTACK_CCACHE ccache)
if(KSTACK_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER
      ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${CMAKE_SOURCE_DIR} CCACHE_NOHASHDIR=1
      CCACHE_SLOPPINESS=pch_defines,time_macros ${KSTACK_CCACHE})
endif()

find_program(KSTACK_LLD ld.lld)
if(KSTACK_LLD)
  add_link_options(-fuse-ld=lld)
endif()

if(KSTACK_SANITIZE)
  string(REPLACE "," ";" _kstack_sanitizers "${KSTACK_SANITIZE}")
  foreach(_s IN LISTS _kstack_sanitizers)
    add_compile_options(-fsanitize=${_s})
    add_link_options(-fsanitize=${_s})
  endforeach()
  add_compile_options(-fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  if("thread" IN_LIST _kstack_sanitizers AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # gcc 12 warns that TSan does not model Asio's atomic_thread_fence.
    add_compile_options(-Wno-tsan)
  endif()
endif()
