// plugin_loader.h: the search, dlopen, the entry point and the version and ABI checks.
#include "plugins/plugin_loader.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "plugins/cuda_plugin.h"
#include "plugins/mpi_plugin.h"

#ifndef OPTPIPE_CUDA_PLUGIN_BUILT
#define OPTPIPE_CUDA_PLUGIN_BUILT 0
#endif
#ifndef OPTPIPE_MPI_PLUGIN_BUILT
#define OPTPIPE_MPI_PLUGIN_BUILT 0
#endif

namespace optpipe {
namespace {

struct PluginSpec {
  const char* what;          // "CUDA plugin"
  const char* file;          // "liboptpipe_cuda.so"
  const char* env;           // "OPTPIPE_CUDA_PLUGIN"
  const char* entry;         // "optpipe_cuda_plugin_v1"
  int flags;                 // dlopen's
  int version;               // the table version this binary expects
  bool built;                // this build made the plugin
  const char* not_built;     // why this build has none
};

// The file of the binary (executable or shared object) that holds this code: the main
// program's own path for an executable (/proc/self/exe), else the library's.
std::string own_binary() {
  struct Search {
    std::uintptr_t address;
    std::string name;
    bool found = false;
  } search{reinterpret_cast<std::uintptr_t>(&own_binary), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          const std::uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
          if (s->address >= begin && s->address < begin + ph.p_memsz) {
            s->name = info->dlpi_name ? info->dlpi_name : "";
            s->found = true;
            return 1;
          }
        }
        return 0;
      },
      &search);
  if (search.found && !search.name.empty()) return search.name;
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

std::string folder_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown dlopen error";
}

template <class Table>
PluginLoad load(const PluginSpec& spec) {
  PluginLoad out;
  std::string named;  // how the message names the file
  void* handle = nullptr;
  const char* env = std::getenv(spec.env);
  if (env && *env) {
    out.path = env;
    named = std::string(spec.env) + "=" + env;
    handle = dlopen(env, spec.flags);
    if (!handle) {
      out.error = std::string("the ") + spec.what + " " + named + " cannot be loaded: " + dl_error();
      return out;
    }
  } else {
    const std::string binary = own_binary();
    const std::string beside = folder_of(binary) + "/" + spec.file;
    if (access(beside.c_str(), F_OK) == 0) {
      out.path = named = beside;
      handle = dlopen(beside.c_str(), spec.flags);
      if (!handle) {
        out.error = std::string("the ") + spec.what + " " + beside + " cannot be loaded: " + dl_error();
        return out;
      }
    } else {
      handle = dlopen(spec.file, spec.flags);
      if (!handle) {
        const std::string why = dl_error();
        out.path = spec.file;
        out.error = std::string("no ") + spec.what + ": " + spec.file + " is neither beside " + binary +
                    " nor on the library path";
        if (why.find(spec.file) == std::string::npos || why.find("cannot open shared object file") == std::string::npos) {
          out.error += " (" + why + ")";  // found, but something it needs is not
        }
        if (!spec.built) out.error += std::string("; ") + spec.not_built;
        out.error += std::string("; set ") + spec.env + " to a plugin's path to use one";
        return out;
      }
      // Where the library path found it.
      Dl_info info{};
      void* sym = dlsym(handle, spec.entry);
      out.path = sym && dladdr(sym, &info) && info.dli_fname ? info.dli_fname : spec.file;
      named = out.path;
    }
  }
  dlerror();
  void* entry = dlsym(handle, spec.entry);
  if (!entry) {
    out.error = named + " is not an OptPipe " + spec.what + ": it has no " + spec.entry;
    return out;
  }
  const Table* head = reinterpret_cast<const Table* (*)()>(entry)();
  if (!head || head->version != spec.version || !head->abi || std::strcmp(head->abi, OPTPIPE_PLUGIN_ABI) != 0) {
    out.error = std::string("the ") + spec.what + " " + named + " was built for another OptPipe: version " +
                std::to_string(head ? head->version : 0) + ", ABI '" + (head && head->abi ? head->abi : "?") +
                "'; this binary wants version " + std::to_string(spec.version) + ", ABI '" + OPTPIPE_PLUGIN_ABI +
                "' (rebuild the plugin with the binary)";
    return out;
  }
  out.table = head;
  return out;
}

}  // namespace

const PluginLoad& cuda_plugin_load() {
  static const PluginLoad loaded = load<CudaPluginV1>({"CUDA plugin", "liboptpipe_cuda.so", "OPTPIPE_CUDA_PLUGIN",
                                         "optpipe_cuda_plugin_v1", RTLD_NOW | RTLD_LOCAL, kCudaPluginVersion,
                                         OPTPIPE_CUDA_PLUGIN_BUILT != 0,
                                         "this build has none (no CUDA compiler when it was configured)"});
  return loaded;
}

const CudaPluginV1* cuda_plugin(std::string* why) {
  const PluginLoad& p = cuda_plugin_load();
  if (!p.table && why) *why = p.error;
  return static_cast<const CudaPluginV1*>(p.table);
}

const PluginLoad& mpi_plugin_load() {
  // RTLD_GLOBAL: Open MPI builds whose components (dlopened by libmpi) are not linked against
  // libmpi look its symbols up globally (mpi4py does the same). Debian's Open MPI 4.1.4 also
  // runs with RTLD_LOCAL (tried), but nothing is lost: the plugin exports little else.
  static const PluginLoad loaded = load<MpiPluginV1>({"MPI plugin", "liboptpipe_mpi.so", "OPTPIPE_MPI_PLUGIN",
                                         "optpipe_mpi_plugin_v1", RTLD_NOW | RTLD_GLOBAL, kMpiPluginVersion,
                                         OPTPIPE_MPI_PLUGIN_BUILT != 0,
                                         "this build has none (no MPI when it was configured)"});
  return loaded;
}

const MpiPluginV1* mpi_plugin(std::string* why) {
  const PluginLoad& p = mpi_plugin_load();
  if (!p.table && why) *why = p.error;
  return static_cast<const MpiPluginV1*>(p.table);
}

}  // namespace optpipe
