# Run at every build (cmake -P, from the memprof_git_sha target): writes
# OUT, a header defining MEMPROF_GIT_SHA as the source tree's HEAD (12 hex
# digits, "unknown" outside a git checkout), rewriting it only when HEAD
# moved, so that a report's `git` is the commit the library was built at
# (read at configure time it stayed the configure's commit) and an
# unchanged HEAD recompiles nothing.
execute_process(
  COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY "${SOURCE_DIR}"
  OUTPUT_VARIABLE sha
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT sha)
  set(sha "unknown")
endif()
set(text "#define MEMPROF_GIT_SHA \"${sha}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
