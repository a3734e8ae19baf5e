// What every OptPipe plugin shares with the binary that loads it (plugin_loader.h): a version
// and an ABI tag that must match, checked before anything else in the plugin is used.
//
// The plugins' tables (cuda_plugin.h, mpi_plugin.h) are reached through one `extern "C"` entry
// point each, but the functions in them take and return C++ objects (std::unique_ptr,
// std::string, the project's interfaces), so a plugin belongs to the build it came from: same
// compiler, same headers. The tag names the project version, the compiler and the standard
// library's string ABI; the loader refuses a plugin whose tag differs, naming both.
#pragma once

#define OPTPIPE_PLUGIN_STRINGIFY2(x) #x
#define OPTPIPE_PLUGIN_STRINGIFY(x) OPTPIPE_PLUGIN_STRINGIFY2(x)

#ifndef OPTPIPE_VERSION_FOR_PLUGINS
#define OPTPIPE_VERSION_FOR_PLUGINS "unknown"
#endif

#if defined(__GNUC__)
#define OPTPIPE_PLUGIN_COMPILER "gcc-compatible " __VERSION__
#else
#define OPTPIPE_PLUGIN_COMPILER "unknown compiler"
#endif

// Compared with strcmp by the loader.
#define OPTPIPE_PLUGIN_ABI                                                                          \
  "optpipe " OPTPIPE_VERSION_FOR_PLUGINS ", " OPTPIPE_PLUGIN_COMPILER ", cxx11-abi " OPTPIPE_PLUGIN_STRINGIFY( \
      _GLIBCXX_USE_CXX11_ABI)
