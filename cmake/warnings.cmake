# Warnings for project code only (third-party headers are system includes).
function(kstack_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wold-style-cast -Wcast-align -Woverloaded-virtual
                                           -Wimplicit-fallthrough)
  if(KSTACK_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
