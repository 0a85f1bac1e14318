# The CPU backend's matrix multiply. Each call is single-threaded inside the
# library; the engine splits work over its own threads (no oversubscription).
# The default was picked by measurement: see docs/PERFORMANCE.md.
set(SHARDSCOPE_BLAS "openblas" CACHE STRING "BLAS for the CPU backend: openblas or blis")
set_property(CACHE SHARDSCOPE_BLAS PROPERTY STRINGS openblas blis)

add_library(shardscope_blas INTERFACE)
if(SHARDSCOPE_BLAS STREQUAL "openblas")
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
  target_link_libraries(shardscope_blas INTERFACE PkgConfig::OPENBLAS)
  target_compile_definitions(shardscope_blas INTERFACE SHARDSCOPE_BLAS_OPENBLAS=1)
elseif(SHARDSCOPE_BLAS STREQUAL "blis")
  find_path(BLIS_INCLUDE_DIR blis.h PATH_SUFFIXES blis REQUIRED)
  find_library(BLIS_LIBRARY blis REQUIRED)
  target_include_directories(shardscope_blas INTERFACE ${BLIS_INCLUDE_DIR})
  target_link_libraries(shardscope_blas INTERFACE ${BLIS_LIBRARY})
  target_compile_definitions(shardscope_blas INTERFACE SHARDSCOPE_BLAS_BLIS=1)
else()
  message(FATAL_ERROR "SHARDSCOPE_BLAS must be openblas or blis, not '${SHARDSCOPE_BLAS}'")
endif()
message(STATUS "ShardScope: CPU matmul through ${SHARDSCOPE_BLAS}")
