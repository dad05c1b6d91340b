// tests/unit/test_core_json.cpp: the run file round trip. Every field the result model holds
// must come back from its JSON unchanged (to_json -> text -> run_from_json), optional fields
// stay empty rather than becoming zeros, and a file that is not a gpubase run is refused.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "core/json.hpp"

namespace {

gb::Run full_run() {
  gb::Run run;
  run.tool_version = "0.1.0";
  run.command = "probe";
  run.started_at = "2026-12-02T11:02:03Z";
  run.duration_s = 41.7;
  run.environment = {gb::Fact::text("gpu.name", "GPU", "NVIDIA H200"),
                     gb::Fact::numeric("gpu.memory", "memory", 139.8, "GiB", 1)};
  run.gpu.link_max_slot = {5, 16};
  run.gpu.link_max_gpu = {5, std::nullopt};

  gb::Result bf16 = gb::Result::measured("probe.gemm.bf16.tflops", "BF16 GEMM 8192³", "TFLOP/s",
                                         {791.25, 789.5, 793.125});
  bf16.param("shape", "8192x8192x8192").param("algorithm", "cublasLt heuristic 0");
  bf16.param("burst_tflops", 829.3, "TFLOP/s", 1).param("m", 8192.0, "", 0);
  bf16.reference("datasheet", 989.4, "spec table").reference("achievable", 791.52, "thresholds");
  bf16.status = gb::Status::pass;
  bf16.reason = "791 TFLOP/s = 80 % of datasheet 989, 100 % of achievable 792";
  gb::Telemetry t;
  t.samples = 40;
  t.sm_clock_mhz_min = 1755;
  t.sm_clock_mhz_max = 1980;
  t.sm_clock_mhz_mean = 1870.5;
  t.power_w_mean = 690.25;
  t.power_limit_w = 700;
  t.temp_c_max = 66;
  t.throttle_reasons = 0x4;
  t.pcie_gen_min = 5;
  t.pcie_width_max = 16;
  t.pcie_replay_delta = 0;
  bf16.telemetry = t;  // mem_clock, power_max, gen_max, width_min left empty on purpose
  run.results.push_back(bf16);

  gb::Result lat = gb::Result::measured("probe.latency.launch_host.us", "launch", "µs",
                                        {2.4, 2.5}, false);
  lat.status = gb::Status::warn;
  lat.advice = "check the CPU governor";
  run.results.push_back(lat);
  run.results.push_back(gb::Result::skipped("probe.gemm.fp8.tflops", "FP8 GEMM", "TFLOP/s",
                                            "needs compute capability 8.9"));

  run.checklist.push_back({"card_speed", "card speed", ">= 90 % of achievable",
                           std::string("compute 100 %"), gb::Status::pass, "evidence", ""});
  run.checklist.push_back({"gpu_util", "GPU utilization during training", "> 95 %", std::nullopt,
                           gb::Status::skipped, "measured by `gpubase watch -- CMD` (not run)",
                           ""});
  run.findings.push_back({"input_bound_cpu", gb::Status::fail, "input-bound on CPU",
                          "GPU busy 41 % while 1 loader process holds a core at 99 %",
                          "add loader workers"});
  return run;
}

void expect_same_telemetry(const gb::Telemetry& a, const gb::Telemetry& b) {
  EXPECT_EQ(a.samples, b.samples);
  EXPECT_EQ(a.sm_clock_mhz_min, b.sm_clock_mhz_min);
  EXPECT_EQ(a.sm_clock_mhz_max, b.sm_clock_mhz_max);
  EXPECT_EQ(a.sm_clock_mhz_mean, b.sm_clock_mhz_mean);
  EXPECT_EQ(a.mem_clock_mhz_mean, b.mem_clock_mhz_mean);
  EXPECT_EQ(a.power_w_mean, b.power_w_mean);
  EXPECT_EQ(a.power_w_max, b.power_w_max);
  EXPECT_EQ(a.power_limit_w, b.power_limit_w);
  EXPECT_EQ(a.temp_c_max, b.temp_c_max);
  EXPECT_EQ(a.throttle_reasons, b.throttle_reasons);
  EXPECT_EQ(a.pcie_gen_min, b.pcie_gen_min);
  EXPECT_EQ(a.pcie_gen_max, b.pcie_gen_max);
  EXPECT_EQ(a.pcie_width_min, b.pcie_width_min);
  EXPECT_EQ(a.pcie_width_max, b.pcie_width_max);
  EXPECT_EQ(a.pcie_replay_delta, b.pcie_replay_delta);
}

void expect_same_result(const gb::Result& a, const gb::Result& b) {
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.label, b.label);
  EXPECT_EQ(a.unit, b.unit);
  EXPECT_EQ(a.higher_is_better, b.higher_is_better);
  EXPECT_EQ(a.value, b.value);
  EXPECT_EQ(a.stats.n, b.stats.n);
  EXPECT_EQ(a.stats.median, b.stats.median);
  EXPECT_EQ(a.stats.mean, b.stats.mean);
  EXPECT_EQ(a.stats.min, b.stats.min);
  EXPECT_EQ(a.stats.max, b.stats.max);
  EXPECT_EQ(a.stats.stddev, b.stats.stddev);
  EXPECT_EQ(a.stats.cv, b.stats.cv);
  EXPECT_EQ(a.samples, b.samples);
  ASSERT_EQ(a.references.size(), b.references.size());
  for (std::size_t i = 0; i < a.references.size(); ++i) {
    EXPECT_EQ(a.references[i].kind, b.references[i].kind);
    EXPECT_EQ(a.references[i].value, b.references[i].value);
    EXPECT_EQ(a.references[i].source, b.references[i].source);
    EXPECT_EQ(a.references[i].ratio, b.references[i].ratio);
  }
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.advice, b.advice);
  ASSERT_EQ(a.telemetry.has_value(), b.telemetry.has_value());
  if (a.telemetry) expect_same_telemetry(*a.telemetry, *b.telemetry);
  EXPECT_EQ(a.params, b.params);
}

}  // namespace

TEST(JsonRoundTrip, EveryFieldComesBackUnchanged) {
  const gb::Run run = full_run();
  const gb::Run back = gb::run_from_json(gb::Json::parse(gb::to_json(run).dump(2)));
  EXPECT_EQ(back.schema_version, run.schema_version);
  EXPECT_EQ(back.tool_version, run.tool_version);
  EXPECT_EQ(back.command, run.command);
  EXPECT_EQ(back.started_at, run.started_at);
  EXPECT_EQ(back.duration_s, run.duration_s);
  ASSERT_EQ(back.environment.size(), run.environment.size());
  for (std::size_t i = 0; i < run.environment.size(); ++i) {
    EXPECT_EQ(back.environment[i].key, run.environment[i].key);
    EXPECT_EQ(back.environment[i].label, run.environment[i].label);
    EXPECT_EQ(back.environment[i].value, run.environment[i].value);
    EXPECT_EQ(back.environment[i].number, run.environment[i].number);
    EXPECT_EQ(back.environment[i].unit, run.environment[i].unit);
    EXPECT_EQ(back.environment[i].decimals, run.environment[i].decimals);
  }
  EXPECT_EQ(back.gpu.unavailable, run.gpu.unavailable);
  EXPECT_EQ(back.gpu.link_max_slot.gen, 5);
  EXPECT_EQ(back.gpu.link_max_slot.width, 16);
  EXPECT_EQ(back.gpu.link_max_gpu.gen, 5);
  EXPECT_FALSE(back.gpu.link_max_gpu.width.has_value());
  ASSERT_EQ(back.results.size(), run.results.size());
  for (std::size_t i = 0; i < run.results.size(); ++i)
    expect_same_result(back.results[i], run.results[i]);
  ASSERT_EQ(back.checklist.size(), run.checklist.size());
  for (std::size_t i = 0; i < run.checklist.size(); ++i) {
    EXPECT_EQ(back.checklist[i].id, run.checklist[i].id);
    EXPECT_EQ(back.checklist[i].check, run.checklist[i].check);
    EXPECT_EQ(back.checklist[i].target, run.checklist[i].target);
    EXPECT_EQ(back.checklist[i].measured, run.checklist[i].measured);
    EXPECT_EQ(back.checklist[i].status, run.checklist[i].status);
    EXPECT_EQ(back.checklist[i].evidence, run.checklist[i].evidence);
    EXPECT_EQ(back.checklist[i].advice, run.checklist[i].advice);
  }
  ASSERT_EQ(back.findings.size(), run.findings.size());
  for (std::size_t i = 0; i < run.findings.size(); ++i) {
    EXPECT_EQ(back.findings[i].id, run.findings[i].id);
    EXPECT_EQ(back.findings[i].status, run.findings[i].status);
    EXPECT_EQ(back.findings[i].title, run.findings[i].title);
    EXPECT_EQ(back.findings[i].evidence, run.findings[i].evidence);
    EXPECT_EQ(back.findings[i].advice, run.findings[i].advice);
  }
}

TEST(JsonRoundTrip, MissingTelemetryFieldsStayEmpty) {
  const gb::Json j = gb::to_json(full_run());
  const gb::Json& t = j["results"][0]["telemetry"];
  EXPECT_TRUE(t["mem_clock_mhz_mean"].is_null());
  EXPECT_TRUE(t["pcie_gen_max"].is_null());
  EXPECT_TRUE(j["results"][1]["telemetry"].is_null());
  EXPECT_TRUE(j["results"][2]["value"].is_null());
}

// Whole-number fields of a damaged file (huge, fractional, negative) read as "no value", never
// through an overflowing conversion (a fuzzer found "decimals": 6.7e18 taking the reader down).
TEST(JsonRoundTrip, DamagedWholeNumbersReadAsNoValue) {
  gb::Json j = gb::to_json(full_run());
  gb::Json& r = j["results"][0];
  gb::Json& m = r["params"][3];  // "m": 8192 with 0 decimals
  ASSERT_EQ(m["name"], "m");
  m["decimals"] = 6.7e18;
  r["stats"]["n"] = 1e300;
  r["telemetry"]["samples"] = -4;
  r["telemetry"]["pcie_gen_min"] = 2.5;
  r["telemetry"]["throttle_reasons"] = -1e30;
  const gb::Run back = gb::run_from_json(gb::Json::parse(j.dump()));
  const gb::Result& b = back.results[0];
  EXPECT_EQ(b.params[3].decimals, -1);
  EXPECT_EQ(b.stats.n, 0u);
  ASSERT_TRUE(b.telemetry.has_value());
  EXPECT_EQ(b.telemetry->samples, 0u);
  EXPECT_FALSE(b.telemetry->pcie_gen_min.has_value());
  EXPECT_FALSE(b.telemetry->throttle_reasons.has_value());
  // In range, a whole number written as a float still reads.
  m["decimals"] = 2.0;
  r["stats"]["n"] = 3.0;
  const gb::Run again = gb::run_from_json(j);
  EXPECT_EQ(again.results[0].params[3].decimals, 2);
  EXPECT_EQ(again.results[0].stats.n, 3u);
}

TEST(JsonRoundTrip, DocumentCarriesSchemaNameAndVersion) {
  const gb::Json j = gb::to_json(full_run());
  EXPECT_EQ(j["schema"], "gpubase.run");
  EXPECT_EQ(j["schema_version"], gb::kSchemaVersion);
}

TEST(JsonRoundTrip, RefusesADocumentThatIsNotARun) {
  EXPECT_THROW(gb::run_from_json(gb::Json::parse(R"({"results": []})")), gb::Error);
  EXPECT_THROW(gb::run_from_json(gb::Json::parse("[1, 2]")), gb::Error);
}

TEST(JsonRoundTrip, RefusesANewerSchemaVersion) {
  gb::Json j = gb::to_json(full_run());
  j["schema_version"] = gb::kSchemaVersion + 1;
  EXPECT_THROW(gb::run_from_json(j), gb::Error);
}

TEST(JsonRoundTrip, RefusesAnUnknownStatus) {
  gb::Json j = gb::to_json(full_run());
  j["results"][0]["status"] = "great";
  EXPECT_THROW(gb::run_from_json(j), gb::Error);
}

TEST(JsonSchema, NumbersStayNumbersInTheDocument) {
  const gb::Json j = gb::to_json(full_run());
  const gb::Json& memory = j["environment"][1];
  EXPECT_EQ(memory["value"], 139.8);
  EXPECT_EQ(memory["unit"], "GiB");
  bool found = false;
  for (const gb::Json& p : j["results"][0]["params"])
    if (p["name"] == "burst_tflops") {
      found = true;
      EXPECT_EQ(p["value"], 829.3);
      EXPECT_EQ(p["unit"], "TFLOP/s");
      EXPECT_FALSE(p.contains("text"));
    }
  EXPECT_TRUE(found);
}

TEST(JsonSchema, ReadsAVersion1RunWithTextParamsAndFacts) {
  const gb::Json v1 = gb::Json::parse(R"({
    "schema": "gpubase.run", "schema_version": 1, "tool_version": "0.1.0", "command": "probe",
    "started_at": "2026-11-30T10:00:00Z", "duration_s": 1.5,
    "environment": [{"key": "gpu.memory", "label": "memory", "value": "139.8 GiB"},
                    {"key": "gpu.available", "label": "GPU", "value": "none: no NVIDIA driver"}],
    "results": [{"key": "probe.gemm.bf16.sustained.tflops", "label": "GEMM", "unit": "TFLOP/s",
                 "value": 699.0, "status": "info",
                 "params": {"burst_tflops": "829.3", "layout": "TN"}}],
    "checklist": [], "findings": []})");
  const gb::Run run = gb::run_from_json(v1);
  EXPECT_EQ(run.schema_version, 1);
  EXPECT_EQ(run.fact("gpu.memory"), "139.8 GiB");
  EXPECT_FALSE(run.fact_number("gpu.memory").has_value());
  ASSERT_EQ(run.results.size(), 1u);
  EXPECT_EQ(run.results[0].text_param("burst_tflops"), "829.3");
  EXPECT_EQ(run.results[0].text_param("layout"), "TN");
  EXPECT_EQ(run.gpu.unavailable, "no NVIDIA driver");
  // Written back, it is a version-2 document.
  EXPECT_EQ(gb::to_json(run)["schema_version"], gb::kSchemaVersion);
}
