# One static library per source folder under src/, built from the files that are there.
# A module with no .cpp yet becomes an INTERFACE library so dependents still link.
#
# The module graph is enforced at configure time: a source file of module M may include
# (#include "X/...") only headers of M and of the modules M depends on, directly or through
# others (DEPS below, as ringlm_X targets). Test areas are held to the modules they link
# (ringlm_check_includes, called by tests/CMakeLists.txt). docs/modules.md draws the graph.
function(ringlm_module name)
  cmake_parse_arguments(M "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/${name}/*.cpp")
  if(srcs)
    add_library(ringlm_${name} STATIC ${srcs})
    target_include_directories(ringlm_${name} PUBLIC "${PROJECT_SOURCE_DIR}/src")
    ringlm_position_independent(ringlm_${name})
    target_link_libraries(ringlm_${name} PUBLIC ${M_DEPS})
  else()
    add_library(ringlm_${name} INTERFACE)
    target_include_directories(ringlm_${name} INTERFACE "${PROJECT_SOURCE_DIR}/src")
    target_link_libraries(ringlm_${name} INTERFACE ${M_DEPS})
  endif()
  # Record the module's closure: itself plus every module its ringlm_* DEPS reach.
  set(closure ${name})
  foreach(dep ${M_DEPS})
    if(dep MATCHES "^ringlm_(.+)$")
      get_property(dep_closure GLOBAL PROPERTY RINGLM_MODULE_CLOSURE_${CMAKE_MATCH_1})
      list(APPEND closure ${dep_closure})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES closure)
  set_property(GLOBAL PROPERTY RINGLM_MODULE_CLOSURE_${name} ${closure})
  file(GLOB_RECURSE files CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/${name}/*.cpp"
       "${CMAKE_CURRENT_SOURCE_DIR}/${name}/*.h")
  ringlm_check_includes("module ${name}" "${closure}" ${files})
endfunction()

# Every library object is position-independent, so the same archives link into the ringlm
# executable and into shared objects (the Python module, python/). -fno-semantic-interposition
# tells the compiler that no other shared object will replace our global functions, so calls
# inside the library stay direct and inlinable as in a non-PIC build (no PLT, no GOT load);
# docs/python.md has the decode timing before and after.
function(ringlm_position_independent target)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE -fno-semantic-interposition)
  endif()
endfunction()

# The modules (without the ringlm_ prefix) that linking `modules` brings in.
function(ringlm_module_closure out)
  set(closure)
  foreach(m ${ARGN})
    get_property(c GLOBAL PROPERTY RINGLM_MODULE_CLOSURE_${m})
    if(NOT c)
      message(FATAL_ERROR "ringlm_module_closure: no module named '${m}'")
    endif()
    list(APPEND closure ${c})
  endforeach()
  list(REMOVE_DUPLICATES closure)
  set(${out} ${closure} PARENT_SCOPE)
endfunction()

# Fails the configure step when one of `files` includes a ringlm header ("X/...", X a module
# folder of src/) from a module outside `allowed`.
function(ringlm_check_includes what allowed)
  file(GLOB module_dirs LIST_DIRECTORIES true RELATIVE "${PROJECT_SOURCE_DIR}/src" "${PROJECT_SOURCE_DIR}/src/*")
  foreach(f ${ARGN})
    file(STRINGS "${f}" includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"[a-z_]+/")
    foreach(line ${includes})
      string(REGEX MATCH "\"([a-z_]+)/" _ "${line}")
      set(m "${CMAKE_MATCH_1}")
      if(m IN_LIST module_dirs AND NOT m IN_LIST allowed)
        file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${f}")
        message(FATAL_ERROR "${rel}: includes a header of module '${m}', which ${what} does not link "
                            "(allowed: ${allowed}; see docs/modules.md)")
      endif()
    endforeach()
  endforeach()
endfunction()
