// cli/option_checks.cpp: see option_checks.hpp.
#include "cli/option_checks.hpp"

#include <cstdlib>
#include <string>

namespace gb::cli {

namespace {

bool is_negative_number(const std::string& text) {
  const std::size_t i = text.find_first_not_of(" \t");
  return i != std::string::npos && text[i] == '-';
}

void add_negative_check(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_type_name().find("UINT") == std::string::npos) continue;
    opt->check(CLI::Validator(
        [](std::string& text) {
          return is_negative_number(text) ? "'" + text + "' is negative (a whole number >= 0)"
                                          : std::string();
        },
        "", "NONNEGATIVE"));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    add_negative_check(*sub);
}

}  // namespace

CLI::Validator positive_count() {
  return CLI::Validator(
      [](std::string& text) {
        char* end = nullptr;
        const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
        if (is_negative_number(text) || end == text.c_str() || *end != '\0' || v == 0)
          return "'" + text + "' is not a whole number >= 1";
        return std::string();
      },
      "", "POSITIVE");
}

void refuse_negative_unsigned(CLI::App& app) { add_negative_check(app); }

}  // namespace gb::cli
