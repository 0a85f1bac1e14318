# The CPU backend's matrix multiply: OpenBLAS, called single-threaded; the
# engine splits each matmul over its own threads (no oversubscription).
# Chosen by measurement against BLIS and oneDNN: see docs/PERFORMANCE.md.
find_package(PkgConfig REQUIRED)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
add_library(shardscope_blas INTERFACE)
target_link_libraries(shardscope_blas INTERFACE PkgConfig::OPENBLAS)
