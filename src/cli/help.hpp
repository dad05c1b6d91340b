// cli/help.hpp: the long help texts: what each probe figure means, what baseline does, exit
// codes. Kept apart from app.cpp so the option wiring stays short.
#pragma once
#include <string>

namespace gb::cli {

std::string probe_help();
std::string baseline_help();
std::string exit_codes_help();
std::string watch_help();
std::string dataset_help();
std::string loader_help();
std::string train_help();
std::string amp_help();

}  // namespace gb::cli
