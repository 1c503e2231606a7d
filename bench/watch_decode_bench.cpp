// Watch stream decoding: kstack's incremental WatchDecoder, fed in network-sized chunks,
// against a reference that has the whole stream at once, splits it on newlines and calls
// boost::json::parse per line (the fastest possible use of the same parser). The ratio
// decoder/reference is the cost of incremental decoding; figures print side by side.
#include <benchmark/benchmark.h>
#include <boost/json.hpp>
#include <fmt/format.h>

#include "kube/watch.h"

namespace {

std::string make_stream(int events) {
  std::string s;
  for (int i = 0; i < events; ++i) {
    s += fmt::format(
        R"({{"type":"MODIFIED","object":{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{)"
        R"("name":"cm-{0}","namespace":"default","uid":"6f0e7c1a-0000-4000-8000-{0:012}",)"
        R"("resourceVersion":"{1}","labels":{{"app.kubernetes.io/managed-by":"kstack"}}}},)"
        R"("data":{{"payload":"{2}"}}}}}})"
        "\n",
        i, 1000 + i, std::string(800, 'x'));
  }
  return s;
}

const std::string& stream() {
  static const std::string s = make_stream(2000);
  return s;
}

void BM_WatchDecoder(benchmark::State& state) {
  const auto chunk = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    kstack::kube::WatchDecoder d;
    std::vector<kstack::kube::WatchEvent> out;
    std::string_view s = stream();
    for (std::size_t i = 0; i < s.size(); i += chunk) {
      if (!d.feed(s.substr(i, chunk), out)) state.SkipWithError("decode failed");
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * stream().size()));
}
BENCHMARK(BM_WatchDecoder)->Arg(4096)->Arg(16384);

void BM_ReferenceParsePerLine(benchmark::State& state) {
  for (auto _ : state) {
    std::vector<boost::json::value> out;
    std::string_view s = stream();
    while (!s.empty()) {
      const auto nl = s.find('\n');
      out.push_back(boost::json::parse(s.substr(0, nl)));
      s.remove_prefix(nl == std::string_view::npos ? s.size() : nl + 1);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * stream().size()));
}
BENCHMARK(BM_ReferenceParsePerLine);

}  // namespace

BENCHMARK_MAIN();
