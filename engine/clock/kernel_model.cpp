// SPDX-License-Identifier: GPL-3.0-or-later
#include "clock/kernel_model.h"

#include <algorithm>
#include <cmath>

namespace shardscope {

namespace {
// XLA's sm_90 table, bf16 x bf16 -> bf16 (kernel_model.h): three shapes and their measured seconds.
constexpr double kH100PeakFlops = 989.4e12, kH100Bandwidth = 3350e9;
// 256 x 512 x 256: 655 kB for 67 MFLOP, memory-bound (its FLOPs would take 0.08 us).
constexpr double kSmallBytes = 2.0 * (256.0 * 256 + 256.0 * 512 + 256.0 * 512);
constexpr double kSmallS = 2.0 * 256 * 512 * 256 / 11'459'846'994'535;
// 4 x 4096 x 4096 x 256: 151 MB for 34 GFLOP, memory-bound.
constexpr double kFlatBytes = 2.0 * 4 * (4096.0 * 256 + 256.0 * 4096 + 4096.0 * 4096);
constexpr double kFlatS = 2.0 * 4 * 4096 * 4096 * 256 / 503'874'974'234'136;
// 4096³: 137 GFLOP, compute-bound.
constexpr double kLargeFlops = 2.0 * 4096 * 4096 * 4096;
constexpr double kLargeS = kLargeFlops / 783'328'793'548'203;

// The two memory-bound entries differ only in bytes: their difference in time gives the
// bandwidth, what is left of the small one the floor, what is left of the large one the FLOP rate.
constexpr double kMemoryFraction = (kFlatBytes - kSmallBytes) / (kFlatS - kSmallS) / kH100Bandwidth;
constexpr double kFloorS = kSmallS - kSmallBytes / (kH100Bandwidth * kMemoryFraction);
constexpr double kGemmFraction = kLargeFlops / (kLargeS - kFloorS) / kH100PeakFlops;

// DeepGEMM's H800 table (kernel_model.h): 4096 x 7168 x 16384 in FP8 at 1358 TFLOP/s, of 1978.9 dense.
constexpr double kH800Fp8PeakFlops = 1978.9e12;
constexpr double kFp8Flops = 2.0 * 4096 * 7168 * 16384;
constexpr double kFp8S = kFp8Flops / 1358e12;
constexpr double kFloat8GemmFraction = kFp8Flops / (kFp8S - kFloorS) / kH800Fp8PeakFlops;

// XLA's sm_90 table at the shapes a training step's weight GEMMs reach: b x 4096 x n x k, so
// b * 4096 output rows in {4096, 8192, 16384}, n and k in {512, 1024, 2048, 4096}; bf16 TFLOP/s
// as measured, rounded to 0.1 (openxla/xla, xla/service/gpu/model/matmul_interpolator_data.h,
// kDefaultMatmulPTable, key "sm_90", "bf16xbf16->bf16": the version whose 4096³ entry reads
// 783328793548203, as the three constants above; its commit was not recorded here, and later
// versions, with upper-case keys, hold a new measurement). Index [rows][n][k], each in that order.
constexpr int kGrid = 4;
constexpr double kGridRowsLog2[3] = {12, 13, 14};        // 4096, 8192, 16384 rows
constexpr double kGridDimLog2[kGrid] = {9, 10, 11, 12};  // 512 ... 4096
constexpr double kTableTflops[3][kGrid][kGrid] = {
    {{238.8, 370.8, 521.7, 650.0},   // b = 1, n = 512;  k = 512, 1024, 2048, 4096
     {343.7, 488.1, 632.0, 738.5},   //        n = 1024
     {447.0, 593.2, 716.1, 758.4},   //        n = 2048
     {543.1, 677.4, 738.7, 783.3}},  //        n = 4096
    {{340.7, 487.2, 622.8, 729.7},   // b = 2
     {445.5, 598.2, 713.4, 750.6},
     {546.4, 680.9, 733.3, 783.2},
     {607.7, 693.0, 763.0, 807.7}},
    {{441.5, 589.0, 703.6, 728.6},  // b = 4
     {542.0, 673.8, 720.5, 777.6},
     {607.5, 687.9, 759.3, 808.7},
     {619.9, 725.5, 764.6, 793.1}}};

// The fraction of peak an entry's FLOPs ran at once the floor is taken off its time: the same
// reading that gives kGemmFraction from 4096³, at every entry.
double entry_fraction(int row, int n, int k) {
  const double flops = 2.0 * std::exp2(kGridRowsLog2[row] + kGridDimLog2[n] + kGridDimLog2[k]);
  const double seconds = flops / (kTableTflops[row][n][k] * 1e12);
  return flops / (seconds - kFloorS) / kH100PeakFlops;
}

// Where x (a log2 size) falls on a grid: the entry below and the weight of the one above. Sizes
// off the grid take its edge (a GEMM wider than 4096 runs as the widest measured one).
struct GridPoint {
  int below;
  double weight;
};
GridPoint locate(const double* grid, int count, double x) {
  if (x <= grid[0]) return {0, 0.0};
  if (x >= grid[count - 1]) return {count - 2, 1.0};
  int i = 0;
  while (x > grid[i + 1]) ++i;
  return {i, (x - grid[i]) / (grid[i + 1] - grid[i])};
}
}  // namespace

double table_gemm_fraction(double m, double n, double k) {
  // The output's longer side is the table's b·m rows, the shorter its n.
  const GridPoint r = locate(kGridRowsLog2, 3, std::log2(std::max(m, n)));
  const GridPoint c = locate(kGridDimLog2, kGrid, std::log2(std::min(m, n)));
  const GridPoint d = locate(kGridDimLog2, kGrid, std::log2(k));
  double fraction = 0;
  for (int dr = 0; dr < 2; ++dr)
    for (int dc = 0; dc < 2; ++dc)
      for (int dd = 0; dd < 2; ++dd) {
        const double w =
            (dr ? r.weight : 1 - r.weight) * (dc ? c.weight : 1 - c.weight) * (dd ? d.weight : 1 - d.weight);
        if (w > 0) fraction += w * entry_fraction(r.below + dr, c.below + dc, d.below + dd);
      }
  return fraction;
}

double KernelModel::gemm_s(double flops, double bytes) const {
  return gemm_floor_s + std::max(flops / (peak_flops * gemm_fraction), memory_s(bytes));
}

double KernelModel::gemm_s(double m, double n, double k, double batch, double bytes) const {
  const double flops = 2 * m * n * k * batch;
  if (!shape_fractions) return gemm_s(flops, bytes);
  const double fraction = table_gemm_fraction(m * batch, n, k);
  return gemm_floor_s + std::max(flops / (peak_flops * fraction), memory_s(bytes));
}

double KernelModel::memory_s(double bytes) const {
  return bytes / (bytes_per_s * memory_fraction);
}

KernelModel measured_kernel_model(double peak_tflops, double memory_gbps) {
  return {peak_tflops * 1e12, memory_gbps * 1e9, kGemmFraction, kMemoryFraction, kFloorS, true};
}

KernelModel measured_float8_kernel_model(double fp8_peak_tflops, double memory_gbps) {
  return {fp8_peak_tflops * 1e12, memory_gbps * 1e9, kFloat8GemmFraction, kMemoryFraction, kFloorS};
}

double float8_gemm_fraction() {
  return kFloat8GemmFraction;
}

KernelModel flat_kernel_model(double peak_tflops, double memory_gbps, double efficiency) {
  return {peak_tflops * 1e12, memory_gbps * 1e9, efficiency, 1.0, 0.0};
}

}  // namespace shardscope
