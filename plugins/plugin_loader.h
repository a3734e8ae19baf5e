// Loads OptPipe's optional plugins with dlopen, on first need, once per process: the CUDA
// plugin (cuda_plugin.h, liboptpipe_cuda.so) and the MPI plugin (mpi_plugin.h,
// liboptpipe_mpi.so). The core links neither CUDA, cuBLAS, NCCL nor MPI; only a command that
// needs them loads them, and one that asks for them where they are missing gets the reason.
//
// Where a plugin is looked for, first found first used:
//   1. $OPTPIPE_CUDA_PLUGIN / $OPTPIPE_MPI_PLUGIN: that file and nothing else;
//   2. the folder of the binary that holds this loader (build/ for build/optpipe, the package
//      folder for the Python module): the plugin's file name there;
//   3. the file name alone, as dlopen looks it up: LD_LIBRARY_PATH, the binary's RUNPATH
//      ($ORIGIN for optpipe; the build folder for the test programs), the system's folders.
// A file found in 1 or 2 that fails to load is the answer (the error names it and dlopen's
// reason, e.g. "libcudart.so.13: cannot open shared object file"); the search stops there.
// Then the plugin's entry point must be there and its version and ABI tag (plugin_abi.h) must
// match this binary's.
//
// Never throws: a plugin that is not there is an answer (null and the reason), which the callers
// turn into their own error ("--bounds gpu: ...") or status. A plugin is never unloaded.
#pragma once

#include <string>

namespace optpipe {

struct CudaPluginV1;
struct MpiPluginV1;

// The outcome of loading one plugin.
struct PluginLoad {
  const void* table = nullptr;  // the plugin's table (CudaPluginV1, MpiPluginV1); null: not loaded
  std::string path;             // the file it was loaded from (or the last one tried)
  std::string error;            // when not loaded: why, naming the plugin and the files tried
};

// The CUDA plugin's table, loaded at the first call (thread-safe); null, with the reason in
// `*why`, when it cannot be loaded.
const CudaPluginV1* cuda_plugin(std::string* why = nullptr);
const PluginLoad& cuda_plugin_load();
// The same for the MPI plugin (opened with RTLD_GLOBAL, mpi_plugin.h says why).
const MpiPluginV1* mpi_plugin(std::string* why = nullptr);
const PluginLoad& mpi_plugin_load();

}  // namespace optpipe
