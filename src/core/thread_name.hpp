// core/thread_name.hpp: names the calling thread, so `top -H`, `ps -L`, a debugger and
// `gpubase watch` of a gpubase process show which of its threads is busy ("gb-load 3",
// "gb-watch"). Linux keeps 15 bytes of a name; a longer one is cut there.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gb {

inline constexpr std::size_t kThreadNameMax = 15;

void name_this_thread(std::string_view name) noexcept;

// The calling thread's name; nullopt where the system does not say.
std::optional<std::string> this_thread_name();

}  // namespace gb
