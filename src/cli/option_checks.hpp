// cli/option_checks.hpp: option checks every command shares. CLI11 reads "-5" into an unsigned
// option as 2^64 - 5 and words its own range errors with 300-digit numbers; these say what is
// wrong in the option's terms instead.
#pragma once
#include <CLI/CLI.hpp>

namespace gb::cli {

// A whole number >= 1 (counts: images, classes, samples per shard).
CLI::Validator positive_count();

// Adds to every option of `app` and its subcommands that reads into an unsigned type a check
// that refuses a negative number (a usage error naming the option), before it can wrap.
void refuse_negative_unsigned(CLI::App& app);

}  // namespace gb::cli
