# Warnings for our own targets. Dependency headers arrive as -isystem and stay quiet.
function(dataflux_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter -Werror=return-type)
endfunction()
