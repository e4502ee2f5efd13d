# The installed package: `cmake --install build --prefix P` puts
# <memprof/memprof.h> (and <memprof/gtest.h>) in P/include, the static libraries behind
# memprof::memprof in P/lib, `memprof` and `memprof-profile` side by side in
# P/bin, and memprofConfig.cmake with its version file, exported targets and
# LibTorch module in P/lib/cmake/memprof. The private headers stay here: the
# public one includes only LibTorch and the standard library.

# memprof::memprof and every library it links, each exported as
# memprof::<name>. Their link interfaces carry what a program needs at link
# time (LibTorch through memprof::libtorch, the libraries below them).
set(MEMPROF_PACKAGE_LIBRARIES
  memprof_session
  memprof_models
  memprof_rank_run
  memprof_capture
  memprof_capture_file
  memprof_report
  memprof_predict
  memprof_size_tables
  memprof_base
)
set_target_properties(memprof_session PROPERTIES EXPORT_NAME memprof)
install(TARGETS ${MEMPROF_PACKAGE_LIBRARIES} EXPORT memprofTargets
  ARCHIVE DESTINATION lib INCLUDES DESTINATION include)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/profiler/session/include/
  DESTINATION include)
install(EXPORT memprofTargets NAMESPACE memprof::
  DESTINATION lib/cmake/memprof)
# memprof::gtest and memprof::gtest_main (<memprof/gtest.h>), in a file of
# their own: the package config loads it only where GoogleTest is found, so
# a program without GoogleTest still uses memprof::memprof.
if(TARGET memprof_gtest)
  set_target_properties(memprof_gtest PROPERTIES EXPORT_NAME gtest)
  set_target_properties(memprof_gtest_main PROPERTIES EXPORT_NAME gtest_main)
  install(TARGETS memprof_gtest memprof_gtest_main EXPORT memprofGTestTargets
    ARCHIVE DESTINATION lib INCLUDES DESTINATION include)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/profiler/gtest/include/
    DESTINATION include)
  install(EXPORT memprofGTestTargets NAMESPACE memprof::
    DESTINATION lib/cmake/memprof)
endif()

# `memprof` hands `profile` to `memprof-profile` next to it. Installed, both
# find LibTorch where the build found it (its folder kept in their RPATH).
set_target_properties(memprof memprof-profile PROPERTIES
  INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS memprof memprof-profile RUNTIME DESTINATION bin)

include(CMakePackageConfigHelpers)
# The CUDA parts the installed libraries were built with: the package finds
# LibTorch's CUDA libraries exactly when they link them.
if(MEMPROF_WITH_CUDA)
  set(MEMPROF_PACKAGE_CUDA ON)
else()
  set(MEMPROF_PACKAGE_CUDA OFF)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/memprofConfig.cmake.in
  ${PROJECT_BINARY_DIR}/memprofConfig.cmake
  INSTALL_DESTINATION lib/cmake/memprof)
# Before 1.0, a minor version may change the API.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/memprofConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/memprofConfig.cmake
  ${PROJECT_BINARY_DIR}/memprofConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/memprofTorch.cmake
  DESTINATION lib/cmake/memprof)
