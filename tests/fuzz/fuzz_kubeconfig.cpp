// Fuzzes the kubeconfig loader (kube::load_kubeconfig): YAML parsing with yaml-cpp, field
// typing, base64 data, relative paths, exec plugin settings. config.cpp has no parse-from-
// string entry point, so each input is written to one file in a private temp dir (on
// /dev/shm when possible), which also holds small credential files that seeds refer to by
// relative path.
//
// While an input is loaded, open() of anything but a regular file is refused (the binary is
// linked with -Wl,--wrap=open): a fuzzed `tokenFile: /dev/stdin` or a FIFO would otherwise
// block the fuzzer. Exec plugins are configured but never run (no bearer_token() call).
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kube/config.h"

namespace {

bool g_restrict_open = false;
std::filesystem::path g_dir;
std::filesystem::path g_config;

void write_file(const std::filesystem::path& path, const char* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data, static_cast<std::streamsize>(size));
  if (!out) {
    (void)std::fprintf(stderr, "fuzz_kubeconfig: cannot write %s\n", path.c_str());
    std::abort();
  }
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  write_file(path, text.data(), text.size());
}

void remove_dir() {
  std::error_code ec;
  std::filesystem::remove_all(g_dir, ec);
}

}  // namespace

// NOLINTNEXTLINE(bugprone-reserved-identifier): the name --wrap=open gives the real open()
extern "C" int __real_open(const char* path, int flags, ...);

// NOLINTNEXTLINE(bugprone-reserved-identifier)
extern "C" int __wrap_open(const char* path, int flags, ...) {
  mode_t mode = 0;
  if ((flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE) {
    va_list args;
    va_start(args, flags);
    mode = static_cast<mode_t>(va_arg(args, int));
    va_end(args);
  }
  if (g_restrict_open) {
    struct stat st {};
    if (::stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
      errno = EACCES;
      return -1;
    }
  }
  return __real_open(path, flags, mode);
}

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  // tmpfs if there is one: on a busy disk, writing and reading the file per input in /tmp
  // made this target 5x slower.
  const char* tmp = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): before fuzzing
  std::string base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  if (::access("/dev/shm", W_OK | X_OK) == 0) base = "/dev/shm";
  std::string templ = base + "/kstack-fuzz-kubeconfig-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) {
    std::perror("fuzz_kubeconfig: mkdtemp");
    std::abort();
  }
  g_dir = templ;
  g_config = g_dir / "config";
  (void)std::atexit(remove_dir);
  // Files the seeds name relatively (resolved against the kubeconfig's directory).
  write_file(g_dir / "token", "file-token\n");
  write_file(g_dir / "ca.crt", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
  write_file(g_dir / "client.crt",
             "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n");
  write_file(g_dir / "client.key",
             "-----BEGIN PRIVATE KEY-----\nMIID\n-----END PRIVATE KEY-----\n");
  write_file(g_dir / "empty", "");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  write_file(g_config, reinterpret_cast<const char*>(data), size);

  kstack::kube::LoadOptions options;
  options.kubeconfig = g_config.string();
  options.getenv = [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
  g_restrict_open = true;
  auto config = kstack::kube::load_kubeconfig(options);
  g_restrict_open = false;

  if (config) {
    // A loaded config always has a usable server URL and a context.
    if (!(config->server.starts_with("https://") || config->server.starts_with("http://")) ||
        config->context_name.empty() || config->namespace_name.empty()) {
      (void)std::fprintf(
          stderr, "loaded config with server \"%s\", context \"%s\", namespace \"%s\"\n",
          config->server.c_str(), config->context_name.c_str(), config->namespace_name.c_str());
      std::abort();
    }
  } else {
    // Every failure is a kConfig error with a message.
    if (config.error().kind != kstack::kube::ErrorKind::kConfig || config.error().message.empty()) {
      (void)std::fprintf(stderr, "unexpected error: %s\n", config.error().to_string().c_str());
      std::abort();
    }
  }
  return 0;
}
