// Status text kstack cuts to a limit stays valid UTF-8. The API server stores a JSON string with
// a split character as U+FFFD (Go's encoding/json), so a message cut mid-character differs from
// the stored one on every later pass: a status write per pass, each waking the next.
#include <string>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "catalog/parse.h"
#include "tests/unit/reconciler/plan_fixture.h"

namespace kstack::reconciler::testing {
namespace {
namespace json = boost::json;

// The length of the valid UTF-8 sequence at `s[i]`, 0 when there is none.
std::size_t sequence_at(std::string_view s, std::size_t i) {
  const auto lead = static_cast<unsigned char>(s[i]);
  const std::size_t n = lead < 0x80           ? 1
                        : (lead >> 5) == 0x6  ? 2
                        : (lead >> 4) == 0xE  ? 3
                        : (lead >> 3) == 0x1E ? 4
                                              : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  }
  return n;
}

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto n = sequence_at(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// What the API server keeps of a string: each invalid byte becomes U+FFFD.
std::string as_stored(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const auto n = sequence_at(s, i);
    out += n == 0 ? std::string("\xEF\xBF\xBD") : std::string(s.substr(i, n));
    i += n == 0 ? 1 : n;
  }
  return out;
}

void store(json::value& v) {
  if (v.is_string()) {
    v = json::string(as_stored(v.as_string()));
  } else if (v.is_object()) {
    for (auto& kv : v.as_object()) store(kv.value());
  } else if (v.is_array()) {
    for (auto& e : v.as_array()) store(e);
  }
}

std::string accents(std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += "\xC3\xA9";  // é
  return s;
}

TEST(PlanUtf8, ALongDegradedMessageIsCutBetweenCharactersAndTheStoredStatusStaysStable) {
  World w(3);
  w.settle();
  // A notification given up on, its error a startscript's non-ASCII stderr.
  catalog::FieldErrors ignored;
  auto status = catalog::decode_stack_status(w.stack.at("status"), ignored);
  status.roles.at(0).members.at(0).state_detail.last_notify_error = "x" + accents(1200);
  w.stack.as_object()["status"] = catalog::to_json(status);
  auto p = pass(w);
  const auto& message = condition(p, "Degraded")->message;
  EXPECT_TRUE(valid_utf8(message));
  EXPECT_LE(message.size(), 2048u);
  // The server keeps it; the next pass finds nothing to write.
  json::value stored = catalog::to_json(p.status);
  store(stored);
  w.stack.as_object()["status"] = stored;
  p = pass(w);
  EXPECT_FALSE(p.write_status);
}

TEST(PlanUtf8, AStartscriptsOutputTailStartsAtACharacter) {
  World w(1, 0, true);
  w.stack.as_object().erase("status");
  FakeSetup failing;
  failing.configure = executor::SetupRunner::ConfigureStatus::State::kDone;
  failing.exit_code = 1;
  // `tail -c` in the container may begin inside a character.
  const std::string tail = accents(1000).substr(1);
  failing.per_member[{"db-server-0", executor::SetupStepKind::kReadConfigureStatus}] =
      executor::SetupOutcome{executor::SetupOutcome::Kind::kDone,
                             "",
                             {executor::SetupRunner::ConfigureStatus::State::kDone,
                              w.container_of("db-server-0"), 1, tail, tail},
                             false,
                             {}};
  const auto p = pass(w, failing);
  const auto& d = w.member(p, "db-server-0")->state_detail;
  EXPECT_TRUE(valid_utf8(d.start_script_stderr_message));
  EXPECT_TRUE(valid_utf8(d.start_script_stdout_message));
  EXPECT_EQ(d.start_script_stderr_message, accents(999));
  EXPECT_EQ(member_state(p, "db-server-0"), catalog::kMemberConfigError);
}

}  // namespace
}  // namespace kstack::reconciler::testing
