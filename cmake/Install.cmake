# `cmake --install`: the ringlm binary with what its first command needs (the Gemma 4
# tokenizer under share/ringlm, from which it writes the demo model to the user's cache on
# first use; the web page is compiled in) and a systemd unit for `serve` (not enabled): the
# `runtime` component. libringlm.a (every module's objects in one archive), the public headers
# under include/ringlm/ (they include each other as "engine/engine.h") and ringlm.pc: the
# `dev` component. CPack turns them into two .debs, ringlm and ringlm-dev (cpack -G DEB in the
# build directory).
include(GNUInstallDirs)

# Every library module: a program that links libringlm.a must find every symbol the public
# headers declare (the engine calls into vision and audio for media prompts).
set(_modules util io kernels kv model tokenizer chat guided sampling vision audio engine server)
set(_objects "")
foreach(m ${_modules})
  list(APPEND _objects "$<TARGET_OBJECTS:ringlm_${m}>")
endforeach()
add_library(ringlm_lib STATIC ${_objects})
set_target_properties(ringlm_lib PROPERTIES OUTPUT_NAME ringlm ARCHIVE_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/lib")

install(TARGETS ringlm RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/assets/gemma4-tokenizer" DESTINATION "${CMAKE_INSTALL_DATADIR}/ringlm"
  COMPONENT runtime PATTERN "README.md" EXCLUDE)
# The unit names the binary by its installed path, known only at install time (the prefix of
# `cmake --install --prefix P`, or /usr inside the .deb).
install(CODE "set(RINGLM_UNIT_BINDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}\")
  configure_file(\"${PROJECT_SOURCE_DIR}/cmake/ringlm.service.in\" \"${PROJECT_BINARY_DIR}/ringlm.service\" @ONLY)"
  COMPONENT runtime)
install(FILES "${PROJECT_BINARY_DIR}/ringlm.service" DESTINATION lib/systemd/system COMPONENT runtime)
install(TARGETS ringlm_lib ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/src/" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/ringlm" COMPONENT dev
  FILES_MATCHING PATTERN "*.h"
  PATTERN "cli" EXCLUDE PATTERN "testing" EXCLUDE PATTERN "web" EXCLUDE)
configure_file("${PROJECT_SOURCE_DIR}/cmake/ringlm.pc.in" "${PROJECT_BINARY_DIR}/ringlm.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/ringlm.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig" COMPONENT dev)
install(FILES "${PROJECT_SOURCE_DIR}/examples/cpp/generate.cpp" DESTINATION "${CMAKE_INSTALL_DOCDIR}/examples"
  COMPONENT dev)

set(CPACK_PACKAGE_NAME "ringlm")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "ringlm maintainers <ringlm@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Native C++20 runtime for Gemma 4 on-device models (CLI, server, library)")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "science")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME "ringlm")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME "ringlm-dev")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION "Native C++20 runtime for Gemma 4 on-device models: the ringlm command (run, chat, extract, serve, pull)")
set(CPACK_COMPONENT_DEV_DESCRIPTION "Native C++20 runtime for Gemma 4 on-device models: static library, headers, pkg-config file")
# ringlm: the shared libraries the binary loads (tests/install checks each one against ldd).
# ringlm-dev: the -dev packages a program linking libringlm.a needs (ringlm.pc's Requires).
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS
  "libc6, libgcc-s1, libstdc++6, libsimdjson14, libcpp-httplib0.11, libssl3, libedit2, libjpeg62-turbo, libpng16-16, libwebp7, libsndfile1, libsoxr0")
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
  "ringlm (= ${PROJECT_VERSION}), libhwy-dev, libsimdjson-dev, libcpp-httplib-dev, nlohmann-json3-dev, libjpeg62-turbo-dev, libpng-dev, libwebp-dev, libsndfile1-dev, libsoxr-dev")
include(CPack)
