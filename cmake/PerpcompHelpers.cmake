# pc_add_library(<name> [TORCH] SOURCES ... [PUBLIC_DEPS ...] [PRIVATE_DEPS ...])
#   A static library of one stage folder. The include root is the repository root, so
#   every project include is path-qualified ("core/check.h"). TORCH libraries reuse one
#   precompiled header of <ATen/ATen.h> (built by pc_pch) to keep a clean build short.
function(pc_add_library name)
  cmake_parse_arguments(ARG "TORCH" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  if(ARG_TORCH)
    target_link_libraries(${name} PUBLIC pc_torch_flags)
    if(TARGET pc_pch AND NOT name STREQUAL "pc_pch")
      target_precompile_headers(${name} REUSE_FROM pc_pch)
    endif()
  endif()
endfunction()

# pc_add_test(<name> SOURCES ... DEPS ...): one Catch2 binary, each TEST_CASE a CTest test.
# Tests find the shared data through PERPCOMP_SHARED (../shared when unset) and the reference
# Python environment through PERPCOMP_REFENV, else the cache variable PC_REFENV (written to
# <build>/pc_refenv.txt by tests/CMakeLists.txt, so a reconfigure takes effect). A test that cannot
# run exits with code 77 (PC_SKIP_IF, tests/test_support.h), which CTest counts as skipped;
# PERPCOMP_CTEST tells the test it runs under CTest (run by hand, a skip only warns and returns).
#
# A test that links LibTorch, directly or through any of its DEPS (TORCH or not), reuses pc_pch,
# whose <ATen/ATen.h> then comes before the test's <catch2/catch.hpp>. The order matters: LibTorch's
# headers bring glog's logging.h, whose CHECK(cond) aborts the process on failure; included after
# Catch2 it replaces Catch2's CHECK, so a test's CHECKs would stop at the first failure without
# Catch2's report and never count as assertions. tests/test_support.h fails the build of a test
# source that includes it where glog's CHECK is in force.
function(pc_links_torch target out)
  set(found FALSE)
  set(seen "")
  set(todo ${target})
  while(todo)
    list(POP_FRONT todo t)
    if(t STREQUAL "pc_torch_flags")
      set(found TRUE)
      break()
    endif()
    if(NOT TARGET ${t} OR t IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${t})
    get_target_property(type ${t} TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(libs ${t} INTERFACE_LINK_LIBRARIES)
    else()
      get_target_property(libs ${t} LINK_LIBRARIES)
    endif()
    if(libs)
      list(APPEND todo ${libs})
    endif()
  endwhile()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

function(pc_add_test name)
  cmake_parse_arguments(ARG "TORCH" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES} ${PROJECT_SOURCE_DIR}/tests/catch_main.cc)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} Catch2::Catch2 pc_test_support)
  set(torch ${ARG_TORCH})
  if(NOT torch AND TARGET pc_pch)
    pc_links_torch(${name} torch)
  endif()
  if(torch AND TARGET pc_pch)
    target_precompile_headers(${name} REUSE_FROM pc_pch)
  endif()
  # --warn NoTests: a registered name that matches no test case (a name CMake split at a ';', or
  # one with Catch2's pattern characters) fails instead of passing with "No tests ran".
  catch_discover_tests(${name}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    EXTRA_ARGS --warn NoTests
    # One ENVIRONMENT entry only: catch_discover_tests flattens a list into property/value pairs.
    # The build and source folders come from pc_test_support's compile definitions.
    PROPERTIES ENVIRONMENT "PERPCOMP_CTEST=1"
               SKIP_RETURN_CODE 77
    DISCOVERY_TIMEOUT 60)
endfunction()
