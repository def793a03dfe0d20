# Writes version.h from its template with the current git commit (run at build time by the
# attngeom_version target). configure_file leaves an unchanged header untouched.
execute_process(COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${SOURCE_DIR}
  OUTPUT_VARIABLE ATTNGEOM_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT ATTNGEOM_GIT_COMMIT)
  set(ATTNGEOM_GIT_COMMIT "unknown")
else()
  execute_process(COMMAND git diff --quiet HEAD --
    WORKING_DIRECTORY ${SOURCE_DIR}
    RESULT_VARIABLE ATTNGEOM_DIRTY ERROR_QUIET)
  if(ATTNGEOM_DIRTY)
    string(APPEND ATTNGEOM_GIT_COMMIT "-dirty")
  endif()
endif()
set(PROJECT_VERSION ${VERSION})
set(PROJECT_SOURCE_DIR ${SOURCE_DIR})
configure_file(${TEMPLATE} ${OUTPUT} @ONLY)
