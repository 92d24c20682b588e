# GpuleakTest.cmake: run a test program under gpuleak and gate it, as one CTest test.
#
#   find_package(gpuleak REQUIRED)        # or include(<gpuleak>/cmake/GpuleakTest.cmake)
#   gpuleak_add_test(NAME train_loop_no_leak
#                    COMMAND $<TARGET_FILE:train_loop> --steps 50
#                    BUDGET_LEAK "1 MiB" BUDGET_PEAK "8 GiB"
#                    SUPPRESSIONS ${CMAKE_CURRENT_SOURCE_DIR}/gpuleak.supp)
#
# The test runs `gpuleak run --quiet --out <OUT_DIR> -- COMMAND...`, then `gpuleak check` with
# the budgets on every report the run wrote. It fails when the program exits non-zero, when it
# wrote no report (it never used CUDA), or when `gpuleak check` exits non-zero (1: over budget,
# 2: bad input). Expecting a leak? set_tests_properties(NAME PROPERTIES WILL_FAIL TRUE).
#
# Options (each maps to the `gpuleak check` flag of the same meaning, docs/ci.md):
#   BUDGET_LEAK size       --max-leak-per-iteration     BUDGET_GROWTH size  --max-growth
#   BUDGET_PEAK size       --max-peak                   MIN_OOM_HORIZON n   --min-oom-horizon
#   WARMUP n               --warmup                     FAIL_ON_INCONCLUSIVE
#   SUPPRESSIONS file      --suppressions               CONFIG file         --config
#   BASELINE file          --baseline                   TOLERANCE pct       --tolerance
#   JUNIT file             --junit                      CHECK_ARGS ...      any other check flags
#   OUT_DIR dir            captures and reports (default <binary dir>/gpuleak/<NAME>, emptied first)
#   WORKING_DIRECTORY dir  where COMMAND runs
#
# The gpuleak executable: GPULEAK_EXECUTABLE when set, else the imported target gpuleak::cli
# (find_package), else the gpuleak_cli target of the gpuleak build itself.
#
# This file is also the script the test runs (cmake -P), see the bottom.

if(NOT CMAKE_SCRIPT_MODE_FILE)
  set(_GPULEAK_TEST_SCRIPT "${CMAKE_CURRENT_LIST_FILE}" CACHE INTERNAL "gpuleak_add_test driver script")
endif()

function(gpuleak_add_test)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "FAIL_ON_INCONCLUSIVE"
    "NAME;BUDGET_LEAK;BUDGET_GROWTH;BUDGET_PEAK;MIN_OOM_HORIZON;WARMUP;SUPPRESSIONS;CONFIG;BASELINE;TOLERANCE;JUNIT;OUT_DIR;WORKING_DIRECTORY"
    "COMMAND;CHECK_ARGS")
  if(NOT ARG_NAME OR NOT ARG_COMMAND)
    message(FATAL_ERROR "gpuleak_add_test: NAME and COMMAND are required")
  endif()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "gpuleak_add_test(${ARG_NAME}): unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(DEFINED GPULEAK_EXECUTABLE)
    set(exe "${GPULEAK_EXECUTABLE}")
  elseif(TARGET gpuleak::cli)
    set(exe "$<TARGET_FILE:gpuleak::cli>")
  elseif(TARGET gpuleak_cli)
    set(exe "$<TARGET_FILE:gpuleak_cli>")
  else()
    message(FATAL_ERROR "gpuleak_add_test: no gpuleak executable (find_package(gpuleak) or set GPULEAK_EXECUTABLE)")
  endif()
  if(NOT ARG_OUT_DIR)
    set(ARG_OUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/gpuleak/${ARG_NAME}")
  endif()

  set(check "")
  foreach(pair "BUDGET_LEAK;--max-leak-per-iteration" "BUDGET_GROWTH;--max-growth" "BUDGET_PEAK;--max-peak"
               "MIN_OOM_HORIZON;--min-oom-horizon" "WARMUP;--warmup" "SUPPRESSIONS;--suppressions"
               "CONFIG;--config" "BASELINE;--baseline" "TOLERANCE;--tolerance" "JUNIT;--junit")
    list(GET pair 0 key)
    list(GET pair 1 flag)
    if(DEFINED ARG_${key})
      list(APPEND check "${flag}" "${ARG_${key}}")
    endif()
  endforeach()
  if(ARG_FAIL_ON_INCONCLUSIVE)
    list(APPEND check --fail-on-inconclusive)
  endif()
  list(APPEND check ${ARG_CHECK_ARGS})

  set(wd "")
  if(ARG_WORKING_DIRECTORY)
    set(wd WORKING_DIRECTORY "${ARG_WORKING_DIRECTORY}")
  endif()
  # Everything after "--" reaches the script intact, one argument each: the check flags, a
  # marker, then the command.
  add_test(NAME ${ARG_NAME} ${wd}
    COMMAND "${CMAKE_COMMAND}" "-DGPULEAK_EXECUTABLE=${exe}" "-DGPULEAK_TEST_OUT=${ARG_OUT_DIR}"
            -P "${_GPULEAK_TEST_SCRIPT}" -- ${check} --gpuleak-command-- ${ARG_COMMAND})
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS gpuleak)
endfunction()

# ---- the test itself: cmake -DGPULEAK_EXECUTABLE=... -DGPULEAK_TEST_OUT=... -P this -- ... -------
if(CMAKE_SCRIPT_MODE_FILE AND CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  set(_check "")
  set(_command "")
  set(_where "")
  math(EXPR _last "${CMAKE_ARGC} - 1")
  foreach(_i RANGE 1 ${_last})
    set(_arg "${CMAKE_ARGV${_i}}")
    if(_where STREQUAL "" AND _arg STREQUAL "--")
      set(_where check)
    elseif(_where STREQUAL "check" AND _arg STREQUAL "--gpuleak-command--")
      set(_where command)
    elseif(_where STREQUAL "check")
      list(APPEND _check "${_arg}")
    elseif(_where STREQUAL "command")
      list(APPEND _command "${_arg}")
    endif()
  endforeach()
  if(NOT _command)
    message(FATAL_ERROR "gpuleak_add_test: no command")
  endif()

  file(REMOVE_RECURSE "${GPULEAK_TEST_OUT}")
  file(MAKE_DIRECTORY "${GPULEAK_TEST_OUT}")
  execute_process(COMMAND "${GPULEAK_EXECUTABLE}" run --quiet --out "${GPULEAK_TEST_OUT}" -- ${_command}
                  RESULT_VARIABLE _run_rc)
  file(GLOB _reports "${GPULEAK_TEST_OUT}/*.report.json")
  if(NOT _reports)
    message(FATAL_ERROR "gpuleak_add_test: no report in ${GPULEAK_TEST_OUT} (did the program use CUDA? exit status ${_run_rc})")
  endif()
  execute_process(COMMAND "${GPULEAK_EXECUTABLE}" check --format plain ${_check} ${_reports}
                  RESULT_VARIABLE _check_rc)
  if(NOT _run_rc EQUAL 0)
    message(FATAL_ERROR "gpuleak_add_test: the program exited with status ${_run_rc}")
  endif()
  if(NOT _check_rc EQUAL 0)
    message(FATAL_ERROR "gpuleak_add_test: gpuleak check exited with status ${_check_rc} (1: over budget, 2: bad input)")
  endif()
endif()
