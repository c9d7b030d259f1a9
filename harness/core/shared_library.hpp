#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace memstress {

// A shared library opened with dlopen(RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) and closed with it (it stays
// mapped until the process ends, its state with it); move-only.
class SharedLibrary {
 public:
  // Throws InputError naming `what` (the flag and value) with dlerror's reason when it does not load.
  SharedLibrary(const std::filesystem::path& path, std::string_view what);
  ~SharedLibrary();
  SharedLibrary(SharedLibrary&& other) noexcept;
  SharedLibrary& operator=(SharedLibrary&& other) noexcept;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  // The address of `symbol` when this library itself defines it; null when it is absent, or when the name
  // only resolves to one of the libraries it depends on (dlsym searches those too: a plugin without a
  // `free` of its own would otherwise get libc's).
  [[nodiscard]] void* own_symbol(const std::string& symbol) const noexcept;
  // Where `symbol` resolves when not in this library ("libc.so.6"), or "" when it does not resolve.
  [[nodiscard]] std::string provider_of(const std::string& symbol) const;
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
  void* handle_ = nullptr;
};

}  // namespace memstress
