# Hugging Face tokenizer.json (src/io/hf_tokenizer.h), included by CMakeLists.txt here.
# The independent reference is transformers.js, pinned by tests/tokenizer_reference/
# package-lock.json and installed into the build tree by a setup test (npm ci
# --ignore-scripts: no install script runs, so nothing downloads binaries); it is never
# needed to build or run attngeom.
find_program(ATTNGEOM_NODE node REQUIRED)
set(_tokref ${CMAKE_CURRENT_BINARY_DIR}/tokenizer_reference)
add_test(NAME python.tokenizer_reference_install
  COMMAND ${CMAKE_COMMAND} -DSOURCE=${PROJECT_SOURCE_DIR}/tests/tokenizer_reference -DDEST=${_tokref}
          -DNPM=${ATTNGEOM_NPM} -P ${PROJECT_SOURCE_DIR}/tests/tokenizer_reference/npm_ci.cmake)
set_tests_properties(python.tokenizer_reference_install PROPERTIES
  FIXTURES_SETUP attngeom_tokenizer_reference TIMEOUT 900)
foreach(_flavour llama3 qwen2 gpt2 bloom)
  add_test(NAME python.hf_tokenizer_${_flavour}
    COMMAND ${_py} ${_here}/test_hf_tokenizer.py --bin $<TARGET_FILE:attngeom> --check reference
            --flavour ${_flavour} --reference ${_tokref} --node ${ATTNGEOM_NODE})
  set_tests_properties(python.hf_tokenizer_${_flavour} PROPERTIES
    FIXTURES_REQUIRED attngeom_tokenizer_reference TIMEOUT 300)
endforeach()
add_test(NAME python.hf_tokenizer_capture
  COMMAND ${_py} ${_here}/test_hf_tokenizer.py --bin $<TARGET_FILE:attngeom> --check capture)
set_tests_properties(python.hf_tokenizer_capture PROPERTIES TIMEOUT 300)
