// core/json.hpp: the result model to and from JSON (schema in docs/results.md).
// Field names here are API: add fields, never rename them without bumping kSchemaVersion.
#pragma once
#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace gb {

using Json = nlohmann::ordered_json;

Json to_json(const Result& r);
Json to_json(const Run& run);
// Throws gb::Error(usage) with a readable message when the document is not a gpubase run.
Run run_from_json(const Json& j);

}  // namespace gb
