// sys/atomic_file.hpp: replace a file's contents so a reader sees the old file or the new one,
// never half of one: the text goes into a temporary file in the same folder, which is then
// renamed over the target (rename is atomic within a file system). node_exporter's textfile
// collector asks for exactly this.
#pragma once
#include <string>
#include <string_view>

namespace gb::sys {

// Throws gb::Error (runtime) naming the file when it cannot be written; the temporary file is
// removed then.
void write_file_atomically(const std::string& path, std::string_view contents);

// Checks now, before a long run, that `path`'s folder exists and a file can be made in it:
// throws gb::Error (usage) naming the folder and why not.
void check_file_writable(const std::string& path, std::string_view option);

}  // namespace gb::sys
