# `cmake --install`: the ringlm binary, libringlm.a (every module's objects in one archive),
# the public headers under include/ringlm/ (they include each other as "engine/engine.h"),
# and ringlm.pc; CPack turns the same into a .deb (cpack -G DEB in the build directory).
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

install(TARGETS ringlm RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ringlm_lib ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY "${PROJECT_SOURCE_DIR}/src/" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/ringlm"
  FILES_MATCHING PATTERN "*.h"
  PATTERN "cli" EXCLUDE PATTERN "testing" EXCLUDE PATTERN "web" EXCLUDE)
configure_file("${PROJECT_SOURCE_DIR}/cmake/ringlm.pc.in" "${PROJECT_BINARY_DIR}/ringlm.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/ringlm.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
install(FILES "${PROJECT_SOURCE_DIR}/examples/cpp/generate.cpp" DESTINATION "${CMAKE_INSTALL_DOCDIR}/examples")

set(CPACK_PACKAGE_NAME "ringlm")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "ringlm maintainers <ringlm@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Native C++20 runtime for Gemma 4 on-device models (CLI, server, library)")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "science")
# Runtime libraries of the binary, and the -dev packages a program linking libringlm.a needs.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
  "libhwy1, libsimdjson14, libcpp-httplib0.11, libedit2, libstdc++6, libjpeg62-turbo, libpng16-16, libwebp7, libsndfile1, libsoxr0, libhwy-dev, libsimdjson-dev, libcpp-httplib-dev, nlohmann-json3-dev, libjpeg62-turbo-dev, libpng-dev, libwebp-dev, libsndfile1-dev, libsoxr-dev")
include(CPack)
