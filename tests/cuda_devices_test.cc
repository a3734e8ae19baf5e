// The CUDA device query. GPU-only checks skip with the reason when no device is present
// (the development and CI machines have none).
#include <gtest/gtest.h>

#include "kernels/cuda_devices.h"

namespace optpipe {
namespace {

TEST(CudaDevices, ReportsAStatusAndConsistentDevices) {
  const CudaDevices info = query_cuda_devices();
  EXPECT_FALSE(info.status.empty());
#ifdef OPTPIPE_HAVE_CUDA_PLUGIN
  EXPECT_TRUE(info.plugin_loaded) << info.status;
  EXPECT_NE(info.plugin.find("liboptpipe_cuda.so"), std::string::npos) << info.plugin;
#else
  EXPECT_FALSE(info.plugin_loaded);
  EXPECT_TRUE(info.devices.empty());
  EXPECT_NE(info.status.find("no CUDA plugin"), std::string::npos) << info.status;
#endif
  for (std::size_t i = 0; i < info.devices.size(); ++i) EXPECT_EQ(info.devices[i].index, static_cast<int>(i));
}

TEST(CudaDevices, GpuIsAnH100ClassDeviceWhenPresent) {
  const CudaDevices info = query_cuda_devices();
  if (info.devices.empty()) GTEST_SKIP() << "no GPU: " << info.status;
  for (const CudaDevice& d : info.devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GT(d.memory_bytes, 0);
    EXPECT_GT(d.multiprocessors, 0);
    EXPECT_GE(d.major * 10 + d.minor, 90) << "the CUDA parts are built for sm_90 (" << d.name << ")";
  }
}

}  // namespace
}  // namespace optpipe
