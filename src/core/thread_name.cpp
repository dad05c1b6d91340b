// core/thread_name.cpp: pthread_setname_np / pthread_getname_np.
#include "core/thread_name.hpp"

#include <pthread.h>

namespace gb {

void name_this_thread(std::string_view name) noexcept {
  char buf[kThreadNameMax + 1] = {};
  name.copy(buf, kThreadNameMax);
  (void)pthread_setname_np(pthread_self(), buf);  // a thread without a name still works
}

std::optional<std::string> this_thread_name() {
  char buf[64] = {};
  if (pthread_getname_np(pthread_self(), buf, sizeof buf) != 0) return std::nullopt;
  return std::string(buf);
}

}  // namespace gb
