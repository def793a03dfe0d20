# cmake -DSOURCE=<this folder> -DDEST=<build folder> -DNPM=<npm> -P npm_ci.cmake
# Copies package.json, package-lock.json and encode.mjs to DEST and runs `npm ci
# --ignore-scripts` there, unless DEST already holds this lock file's install.
file(MAKE_DIRECTORY ${DEST})
foreach(_file package.json package-lock.json encode.mjs)
  file(COPY_FILE ${SOURCE}/${_file} ${DEST}/${_file} ONLY_IF_DIFFERENT)
endforeach()
file(SHA256 ${SOURCE}/package-lock.json _lock)
set(_stamp ${DEST}/npm-ci.stamp)
if(EXISTS ${_stamp})
  file(READ ${_stamp} _installed)
  if(_installed STREQUAL _lock)
    return()
  endif()
endif()
execute_process(COMMAND ${NPM} ci --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error
  WORKING_DIRECTORY ${DEST} RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "npm ci in ${DEST} failed (${_rc})")
endif()
file(WRITE ${_stamp} ${_lock})
