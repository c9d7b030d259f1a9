// Reading the two sides of `memstress compare`: memstress documents and streams, Google Benchmark JSON,
// and the errors that name the file. The fixtures under tests/data/compare/ are synthetic
// (make_fixtures.py); results/h200/ holds real files, read and never written.

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/results/lenient_json.hpp"
#include "harness/results/read.hpp"
#include "temp_dir.hpp"

namespace memstress::compare {
namespace {

namespace fs = std::filesystem;
using memstress::testing::slurp;
using memstress::testing::TempDir;

const fs::path kSource = MEMSTRESS_SOURCE_DIR;
const fs::path kFixtures = kSource / "tests" / "data" / "compare";

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

// The message of the InputError that loading `path` throws ("" when it does not).
std::string load_error(const fs::path& path) {
  try {
    static_cast<void>(load_results(path, "NEW"));
  } catch (const InputError& e) {
    EXPECT_EQ(e.exit_code(), ExitCode::bad_input);
    return e.what();
  }
  return "";
}

std::string fact(const Results& r, const std::string& label) {
  for (const auto& [l, v] : r.environment) {
    if (l == label) {
      return v;
    }
  }
  return "(absent)";
}

TEST(LoadResults, MemstressDocument) {
  const Results r = load_results(kFixtures / "base.json", "BASE");
  EXPECT_EQ(r.kind, ResultsKind::memstress);
  EXPECT_EQ(r.format, "memstress.run/1 document");
  ASSERT_EQ(r.rows.size(), 3U);
  const ResultRow& smoke = r.rows[0];
  EXPECT_EQ(smoke.workload, "smoke");
  EXPECT_EQ(smoke.case_label, "bytes=64M pattern=random");
  EXPECT_EQ(smoke.params.at("pattern"), "random");
  EXPECT_EQ(smoke.allocator, "caching");
  EXPECT_EQ(smoke.device, "NVIDIA H200");
  EXPECT_EQ(smoke.rank, 0);
  const MetricResult* fill = smoke.metric("fill");
  ASSERT_NE(fill, nullptr);
  EXPECT_EQ(fill->unit, "GB/s");
  EXPECT_EQ(fill->better, Better::higher);
  EXPECT_EQ(fill->samples.size(), 5U);
  EXPECT_DOUBLE_EQ(fill->summary.median, 3751.6);
  EXPECT_EQ(r.rows[2].verdict, Verdict::skip);
  EXPECT_EQ(fact(r, "driver"), "580.159.04");
  EXPECT_EQ(fact(r, "memstress git sha"), "synthetic");
  EXPECT_EQ(fact(r, "GPU 0 memory"), "139.80 GiB");
  EXPECT_EQ(fact(r, "GPU 0 ECC"), "on");
  EXPECT_EQ(fact(r, "GPU 0 SM clock max"), "1980 MHz");
  EXPECT_TRUE(r.notes.empty());
}

// What accept's verdict rests on (Note [What a run promised] in harness/accept/input.hpp): the job's ranks as
// its header says them, whatever rows there are, each rank's GPU, and why an aborted run ended.
TEST(LoadResults, TheHeaderSaysTheJobsRanksAndWhyItWasAborted) {
  nlohmann::json doc = nlohmann::json::parse(slurp(kFixtures / "base.json"));
  EXPECT_EQ(parse_results(doc.dump()).ranks, 1);  // no config.ranks: one rank in the environment
  doc["config"]["ranks"] = 2;
  doc["status"] = "aborted";
  doc["abort_reason"] = "XID 79 during the run";
  Results r = parse_results(doc.dump());
  EXPECT_EQ(r.ranks, 2);
  EXPECT_EQ(r.abort_reason, "XID 79 during the run");
  doc["config"]["ranks"] = "two";  // the config is read leniently: the environment's ranks stand
  nlohmann::json fifth = doc["environment"]["ranks"][0];
  fifth["rank"] = 4;
  fifth["device"] = {{"label", "cuda:4"}, {"uuid", "GPU-4"}, {"pci_bus_id", "0000:04:00.0"}};
  doc["environment"]["ranks"].push_back(fifth);
  r = parse_results(doc.dump());
  EXPECT_EQ(r.ranks, 5);  // a header that names rank 4 promises ranks 0 to 4
  ASSERT_EQ(r.identities.size(), 2U);
  EXPECT_EQ(r.identities[1].device_label, "cuda:4");
  EXPECT_EQ(r.identities[1].device_pci_bus_id, "0000:04:00.0");
}

// Note [One name per figure]: an older file's second names read as the one names newer rows record, so that
// the two compare; a figure an older row has under both names is kept once, or twice where the two disagree.
TEST(LoadResults, AnOlderFilesSecondNamesReadAsTheOneNames) {
  nlohmann::json doc = nlohmann::json::parse(slurp(kFixtures / "base.json"));
  const nlohmann::json metric = doc["rows"][0]["metrics"]["fill"];
  nlohmann::json oom = doc["rows"][0];
  oom["workload"] = "oom";
  oom["metrics"] = {{"largest", metric}, {"oom_count", metric}, {"trials", metric}, {"ratio", metric}};
  nlohmann::json sizes = doc["rows"][0];
  sizes["workload"] = "sizes";
  sizes["metrics"] = {{"ooms", metric}, {"num_ooms", metric}};
  nlohmann::json disagree = sizes;
  disagree["metrics"]["ooms"]["median"] = 1.0;
  nlohmann::json other = doc["rows"][0];  // another workload's figure of that name is its own
  other["metrics"] = {{"largest", metric}};
  doc["rows"] = {oom, sizes, disagree, other};
  const Results r = parse_results(doc.dump());
  const auto names = [](const ResultRow& row) {
    std::vector<std::string> out;
    for (const MetricResult& m : row.metrics) {
      out.push_back(m.name);
    }
    return out;
  };
  using Names = std::vector<std::string>;
  EXPECT_EQ(names(r.rows[0]), (Names{"largest_allocatable", "num_ooms", "ratio", "probes"}));
  EXPECT_EQ(names(r.rows[1]), (Names{"num_ooms"}));
  EXPECT_EQ(names(r.rows[2]), (Names{"num_ooms", "ooms"}));
  EXPECT_EQ(names(r.rows[3]), (Names{"largest"}));
}

TEST(LoadResults, StreamReadsAsTheDocument) {
  const Results doc = load_results(kFixtures / "base.json", "BASE");
  const Results stream = load_results(kFixtures / "base.jsonl", "NEW");
  EXPECT_EQ(stream.format, "memstress.run/1 stream");
  ASSERT_EQ(stream.rows.size(), doc.rows.size());
  for (std::size_t i = 0; i < doc.rows.size(); ++i) {
    EXPECT_EQ(stream.rows[i].case_label, doc.rows[i].case_label);
    EXPECT_EQ(stream.rows[i].metrics.size(), doc.rows[i].metrics.size());
  }
  EXPECT_EQ(stream.environment, doc.environment);
  EXPECT_TRUE(stream.notes.empty());  // the footer says complete
}

TEST(LoadResults, CrashedStreamKeepsItsRows) {
  const TempDir dir;
  std::string text = slurp(kFixtures / "base.jsonl");
  text = text.substr(0, text.rfind('\n', text.size() - 2) + 1);          // the footer, the last line, gone
  write(dir.file("crashed.jsonl"), text + R"({"type": "row", "workl)");  // a row cut short
  const Results r = load_results(dir.file("crashed.jsonl"), "NEW");
  EXPECT_EQ(r.rows.size(), 3U);
  ASSERT_EQ(r.notes.size(), 2U);
  EXPECT_NE(r.notes[0].find("did not finish"), std::string::npos);
  EXPECT_NE(r.notes[1].find("cut short"), std::string::npos);

  // Damage before the end is an error naming the line.
  const std::size_t second_line = text.find('\n') + 1;
  write(dir.file("damaged.jsonl"), text.substr(0, second_line) + "{oops\n" + text.substr(second_line));
  EXPECT_NE(load_error(dir.file("damaged.jsonl")).find("line 2: not JSON"), std::string::npos);
}

TEST(LoadResults, BadInputNamesTheFile) {
  const TempDir dir;
  EXPECT_EQ(load_error(dir.file("missing.json")),
            "NEW '" + dir.file("missing.json").string() + "': no such file");
  EXPECT_NE(load_error(dir.path()).find("a directory"), std::string::npos);
  write(dir.file("text.json"), "hello");
  EXPECT_NE(load_error(dir.file("text.json")).find("text.json': not JSON"), std::string::npos);
  write(dir.file("empty.json"), "");
  EXPECT_NE(load_error(dir.file("empty.json")).find("not JSON"), std::string::npos);
  write(dir.file("array.json"), "[1, 2]");
  EXPECT_NE(load_error(dir.file("array.json")).find("not a results file (a JSON array"), std::string::npos);
  write(dir.file("other.json"), R"({"hello": 1})");
  EXPECT_NE(load_error(dir.file("other.json")).find("neither memstress results"), std::string::npos);
  EXPECT_NE(load_error(kFixtures / "unknown-schema.json").find("unknown schema \"memstress.run/99\""),
            std::string::npos);
  // A row without its workload: which row, and what is missing.
  nlohmann::json doc = nlohmann::json::parse(slurp(kFixtures / "base.json"));
  doc["rows"][1].erase("workload");
  write(dir.file("no-workload.json"), doc.dump());
  const std::string message = load_error(dir.file("no-workload.json"));
  EXPECT_NE(message.find("row 2"), std::string::npos) << message;
  EXPECT_NE(message.find("workload"), std::string::npos) << message;
  doc = nlohmann::json::parse(slurp(kFixtures / "base.json"));
  doc["rows"][0]["metrics"]["fill"]["better"] = "sideways";
  write(dir.file("sideways.json"), doc.dump());
  EXPECT_NE(load_error(dir.file("sideways.json")).find("row 1: field metrics.fill.better: 'sideways'"),
            std::string::npos);
}

// A value nested 100,000 deep in a row's params crashed compare (SIGSEGV: the rows were copied,
// and nlohmann::json copies recursively); fields of the wrong type ended accept in "internal error".
TEST(LoadResults, DeepValuesAreRefusedBeforeTheyAreParsed) {
  const std::string text = slurp(kFixtures / "base.json");
  const std::size_t params = text.rfind("\"params\": {") + std::string("\"params\": {").size();
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  try {
    static_cast<void>(
        parse_results(text.substr(0, params) + "\"deep\": " + deep + ", " + text.substr(params)));
    ADD_FAILURE() << "a params value 100,000 deep was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("nested more than 128 levels deep (line "), std::string::npos)
        << e.what();
  }
  // The stream is bounded as a whole, before its lines are parsed: the line is named.
  std::string stream = slurp(kFixtures / "base.jsonl");
  const std::size_t line2 = stream.find('\n') + 1;
  stream.insert(stream.find("\"params\": {", line2) + std::string("\"params\": {").size(),
                "\"deep\": " + deep + ", ");
  EXPECT_THROW(static_cast<void>(parse_results(stream)), InputError);
  const TempDir dir;
  write(dir.file("deep.jsonl"), stream);
  EXPECT_NE(load_error(dir.file("deep.jsonl"))
                .find("deep.jsonl': nested more than 128 levels deep (line 2, column "),
            std::string::npos);
}

TEST(LoadResults, FieldsOfTheWrongTypeAreNamedWithTheirRow) {
  const nlohmann::json base = nlohmann::json::parse(slurp(kFixtures / "base.json"));
  const auto error = [&](const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json doc = base;
    change(doc);
    try {
      static_cast<void>(parse_results(doc.dump()));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error([](nlohmann::json& d) { d["rows"][2]["params"] = 7; }),
            "row 3: field params: expected an object, found a number (7)");
  EXPECT_EQ(error([](nlohmann::json& d) { d["rows"][1]["params"]["bytes"] = {{"x"}}; }),
            "row 2: field params.bytes: expected a string, found an array");
  EXPECT_EQ(error([](nlohmann::json& d) { d["rows"][0]["metrics"]["fill"]["median"] = "fast"; }),
            "row 1: field metrics.fill.median: expected a number, found a string (\"fast\")");
  EXPECT_EQ(error([](nlohmann::json& d) { d["rows"][0]["metrics"]["fill"]["samples"][2] = true; }),
            "row 1: field metrics.fill.samples[2]: expected a number, found a boolean (true)");
  EXPECT_EQ(error([](nlohmann::json& d) { d["rows"][1]["verdict"] = 1; }),
            "row 2: field verdict: expected a string, found a number (1)");
  EXPECT_EQ(error([](nlohmann::json& d) { d["rows"][0]["device"] = "NVIDIA H200"; }),
            "row 1: field device: expected an object, found a string (\"NVIDIA H200\")");
  EXPECT_EQ(error([](nlohmann::json& d) { d["rows"][1]["rank"] = "0"; }),
            "row 2: field rank: expected a whole number from 0 to 999999, found a string (\"0\")");
  EXPECT_EQ(error([](nlohmann::json& d) { d["rows"][1]["rank"] = 1.5; }),
            "row 2: field rank: expected a whole number from 0 to 999999, found a number (1.5)");
  EXPECT_EQ(error([](nlohmann::json& d) { d["rows"][0]["verification"].erase("errors"); }),
            "row 1: field verification.errors: missing");
  EXPECT_EQ(error([](nlohmann::json& d) {
              d["rows"] = {{"0", 1}};
            }),
            "field rows: expected an array of rows, found an object");
  EXPECT_EQ(error([](nlohmann::json& d) { d["rows"][0] = 5; }),
            "row 1: expected an object, found a number (5)");
  EXPECT_EQ(error([](nlohmann::json& d) { d["status"] = 3; }),
            "field status: expected a string, found a number (3)");
  EXPECT_EQ(error([](nlohmann::json& d) { d["environment"]["ranks"][0]["rank"] = -1; }),
            "field environment.ranks[0].rank: expected a whole number from 0 to 999999, found a number (-1)");
}

TEST(LoadResults, GoogleBenchmarkFieldsOfTheWrongTypeAreNamed) {
  nlohmann::json doc = {
      {"context", {{"gpu", "G"}}},
      {"benchmarks", {{{"name", "BM_A"}, {"real_time", 1}}, {{"name", "BM_B"}, {"skipped", "yes"}}}}};
  try {
    static_cast<void>(parse_results(doc.dump()));
    ADD_FAILURE() << "skipped: \"yes\" was read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "field benchmarks[1].skipped: expected true or false, found a string (\"yes\")");
  }
  doc["context"]["gpu"] = 7;
  EXPECT_THROW(static_cast<void>(parse_results(doc.dump())), InputError);
}

// accept judges the rows of its own run and those of results files alike: the same row either way.
TEST(LoadResults, ARowOfThisRunReadsAsItsFileGivesItBack) {
  const Results r = load_results(kFixtures / "base.json", "BASE");
  Row row;
  row.workload = "smoke";
  row.params = {{"bytes", "64M"}, {"pattern", "random"}};
  row.allocator = "caching";
  row.rank = 1;
  row.device.name = "NVIDIA H200";
  row.verdict = Verdict::fail;
  row.reason = "2 bad elements";
  row.checked = 100;
  row.errors = 2;
  row.metrics = r.rows[0].metrics;
  RunRecord run;
  run.environment = {{"ranks", nlohmann::json::array()}};
  run.rows = {row};
  const ResultRow direct = result_row(row);
  const ResultRow read = parse_results(run_json(run).dump()).rows.at(0);
  EXPECT_EQ(read.workload, direct.workload);
  EXPECT_EQ(read.case_label, direct.case_label);
  EXPECT_EQ(read.params, direct.params);
  EXPECT_EQ(read.rank, direct.rank);
  EXPECT_EQ(read.device, direct.device);
  EXPECT_EQ(read.verdict, direct.verdict);
  EXPECT_EQ(read.errors, 2U);
  EXPECT_EQ(direct.errors, 2U);
  EXPECT_EQ(read.checked, direct.checked);
  ASSERT_EQ(read.metrics.size(), direct.metrics.size());
  EXPECT_EQ(read.metrics[0].samples, direct.metrics[0].samples);
}

TEST(LoadResults, GoogleBenchmarkRepetitionsAreTheSamples) {
  const Results r = load_results(kFixtures / "gbench-base.json", "BASE");
  EXPECT_EQ(r.kind, ResultsKind::google_benchmark);
  ASSERT_EQ(r.rows.size(), 2U);  // one per run_name; aggregates are not rows
  const ResultRow& pair = r.rows[0];
  EXPECT_EQ(pair.workload, "BM_Pair");
  EXPECT_EQ(pair.case_label, "caching/cuda/512");
  EXPECT_EQ(pair.device, "NVIDIA H200");  // the context's gpu
  EXPECT_FALSE(pair.rank);
  ASSERT_GE(pair.metrics.size(), 3U);
  EXPECT_EQ(pair.metrics[0].name, "real_time");
  EXPECT_EQ(pair.metrics[1].name, "cpu_time");
  const MetricResult& real = pair.metrics[0];
  EXPECT_EQ(real.unit, "ns");
  EXPECT_EQ(real.better, Better::lower);
  EXPECT_EQ(real.samples, (std::vector<double>{99.1, 98.7, 100.2, 99.5, 98.9}));
  EXPECT_DOUBLE_EQ(real.summary.median, 99.1);
  const MetricResult* items = pair.metric("items_per_second");
  ASSERT_NE(items, nullptr);
  EXPECT_EQ(items->better, Better::higher);
  EXPECT_EQ(items->unit, "items/s");
  const MetricResult* nan_counter = pair.metric("device_allocs_per_pair");  // bare NaN in the file
  ASSERT_NE(nan_counter, nullptr);
  EXPECT_EQ(nan_counter->better, Better::none);
  EXPECT_TRUE(std::isnan(nan_counter->summary.median));
  EXPECT_EQ(fact(r, "driver_version"), "580.159.04");
  EXPECT_EQ(fact(r, "date"), "(absent)");  // when it ran, not what it ran on
  EXPECT_TRUE(r.notes.empty());
}

TEST(LoadResults, GoogleBenchmarkAggregatesOnlyGiveMedians) {
  // The real file: --benchmark_report_aggregates_only, NaN counters.
  const Results r =
      load_results(kSource / "results" / "h200" / "bench-alloc-h200-580.159.04.json.xz", "BASE");
  ASSERT_EQ(r.rows.size(), 100U);
  const MetricResult& real = r.rows[0].metrics[0];
  EXPECT_EQ(real.name, "real_time");
  EXPECT_TRUE(real.samples.empty());
  EXPECT_DOUBLE_EQ(real.summary.median, 99.1304209694684);  // the "median" aggregate, not the mean
  ASSERT_EQ(r.notes.size(), 1U);
  EXPECT_NE(r.notes[0].find("aggregates only"), std::string::npos);
}

TEST(LoadResults, GoogleBenchmarkErrorsAndSkips) {
  const nlohmann::json doc = parse_json_allowing_nan(R"({
    "context": {"host_name": "synthetic"},
    "benchmarks": [
      {"name": "BM_A/1", "run_name": "BM_A/1", "run_type": "iteration", "error_occurred": true,
       "error_message": "cudaMalloc failed", "iterations": 0, "real_time": 0, "cpu_time": 0, "time_unit": "us"},
      {"name": "BM_B", "run_name": "BM_B", "run_type": "iteration", "skipped": true, "skip_message": "needs 2 GPUs",
       "iterations": 0, "real_time": 0, "cpu_time": 0, "time_unit": "ns"},
      {"name": "BM_C/threads:4", "run_type": "iteration", "iterations": 10, "real_time": 1.5, "cpu_time": 1.4,
       "time_unit": "ms", "bytes_per_second": 1e9, "peak": 3}
    ]})");
  const Results r = google_benchmark_results(doc);
  ASSERT_EQ(r.rows.size(), 3U);
  EXPECT_EQ(r.rows[0].verdict, Verdict::error);
  EXPECT_EQ(r.rows[0].reason, "cudaMalloc failed");
  EXPECT_TRUE(r.rows[0].metrics.empty());  // its zero times are not measurements
  EXPECT_EQ(r.rows[1].verdict, Verdict::skip);
  EXPECT_EQ(r.rows[1].case_label, "");
  const ResultRow& c = r.rows[2];  // no run_name (old versions): the name
  EXPECT_EQ(c.case_label, "threads:4");
  EXPECT_EQ(c.verdict, Verdict::pass);
  EXPECT_EQ(c.metrics[0].unit, "ms");
  EXPECT_EQ(c.metric("bytes_per_second")->unit, "B/s");
  EXPECT_EQ(c.metric("bytes_per_second")->better, Better::higher);
  EXPECT_EQ(c.metric("peak")->better, Better::none);
  EXPECT_EQ(c.metric("iterations"), nullptr);
}

TEST(LenientJson, NaNAndInfinityReadAsNullOutsideStrings) {
  const nlohmann::json j =
      parse_json_allowing_nan(R"({"a": NaN, "b": -Infinity, "c": [Infinity, -NaN], "s": "NaN \" Infinity"})");
  EXPECT_TRUE(j.at("a").is_null());
  EXPECT_TRUE(j.at("b").is_null());
  EXPECT_TRUE(j.at("c")[0].is_null());
  EXPECT_TRUE(j.at("c")[1].is_null());
  EXPECT_EQ(j.at("s"), "NaN \" Infinity");
  EXPECT_THROW(static_cast<void>(parse_json_allowing_nan("{\"a\": nan}")), InputError);
  EXPECT_THROW(
      static_cast<void>(parse_json_allowing_nan(std::string(200, '[') + "NaN" + std::string(200, ']'))),
      InputError);
}

}  // namespace
}  // namespace memstress::compare
