# SPDX-License-Identifier: Apache-2.0
# Helpers shared by every component: one library per component, thin daemons,
# one Check suite per source file registered with ctest.

# Tests that run on a reactor are registered once per backend so the whole suite
# runs against io_uring and against the epoll fallback.
set(CAIRN_REACTOR_BACKENDS uring epoll)

function(cairn_add_library name)
	cmake_parse_arguments(A "" "" "SOURCES;DEPS" ${ARGN})
	add_library(${name} STATIC ${A_SOURCES})
	target_include_directories(${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include
		PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
	target_link_libraries(${name} PUBLIC ${A_DEPS})
endfunction()

function(cairn_add_daemon name)
	cmake_parse_arguments(A "" "" "SOURCES;DEPS" ${ARGN})
	add_executable(${name} ${A_SOURCES})
	target_link_libraries(${name} PRIVATE ${A_DEPS})
endfunction()

# cairn_add_unit_test(NAME SOURCES ... DEPS ... [REACTOR] [LABELS ...] [TIMEOUT s])
function(cairn_add_unit_test name)
	cmake_parse_arguments(A "REACTOR" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
	if(NOT A_TIMEOUT)
		set(A_TIMEOUT 120)
	endif()
	if(NOT A_LABELS)
		set(A_LABELS unit)
	endif()
	add_executable(${name} ${A_SOURCES})
	target_link_libraries(${name} PRIVATE ${A_DEPS} cairn_testlib PkgConfig::CHECK)
	if(A_REACTOR)
		foreach(b ${CAIRN_REACTOR_BACKENDS})
			add_test(NAME ${name}.${b} COMMAND ${name})
			set_tests_properties(${name}.${b} PROPERTIES LABELS "${A_LABELS}"
				TIMEOUT ${A_TIMEOUT} ENVIRONMENT "CAIRN_REACTOR=${b};CK_DEFAULT_TIMEOUT=60"
				SKIP_RETURN_CODE 77)
		endforeach()
	else()
		add_test(NAME ${name} COMMAND ${name})
		set_tests_properties(${name} PROPERTIES LABELS "${A_LABELS}" TIMEOUT ${A_TIMEOUT}
			ENVIRONMENT "CK_DEFAULT_TIMEOUT=60" SKIP_RETURN_CODE 77)
	endif()
endfunction()
