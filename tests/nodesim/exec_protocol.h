// The kubelet's exec endpoint, the pure parts: the request line the API server forwards
// (GET /exec/NS/POD[/UID]/CONTAINER?command=..&input=1&output=1&error=1&tty=1), WebSocket
// subprotocol negotiation, and the channel-3 status the kubelet sends at the end.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <tl/expected.hpp>

namespace kstack::nodesim {

// Channels (first byte of every binary frame) of the *.channel.k8s.io protocols.
inline constexpr std::uint8_t kStdinChannel = 0;
inline constexpr std::uint8_t kStdoutChannel = 1;
inline constexpr std::uint8_t kStderrChannel = 2;
inline constexpr std::uint8_t kErrorChannel = 3;
inline constexpr std::uint8_t kResizeChannel = 4;
inline constexpr std::uint8_t kCloseSignal = 255;  // v5: {255, channel} closes that stream

enum class StreamProtocol {
  kV1,  // "channel.k8s.io", or no subprotocol at all: text errors on channel 3
  kV2,  // "v2.channel.k8s.io"
  kV3,  // "v3.channel.k8s.io": adds terminal resize (channel 4)
  kV4,  // "v4.channel.k8s.io": channel 3 carries a JSON metav1.Status with the exit code
  kV5,  // "v5.channel.k8s.io": adds the close signal, so stdin can end without closing
};

struct NegotiatedProtocol {
  StreamProtocol protocol = StreamProtocol::kV1;
  std::string name;  // echoed in Sec-WebSocket-Protocol; empty when the client offered none
};

// The subprotocols a server offers. Every one by default, as a kubelet 1.30+ (with v5); a kubelet
// before 1.30 has no v5, and tests restrict further to exercise a client's fallbacks.
using ProtocolSet = std::vector<StreamProtocol>;
ProtocolSet all_protocols();
std::string_view protocol_name(StreamProtocol protocol);

// "v4.channel.k8s.io,channel.k8s.io" -> {kV4, kV1}; the error names an unknown or missing entry.
tl::expected<ProtocolSet, std::string> parse_protocol_set(std::string_view names);

// Picks the first protocol of the client's comma-separated Sec-WebSocket-Protocol list that is
// in `offered` (the client's preference wins, as in the kubelet's wsstream). No header: v1
// semantics without a subprotocol, if v1 is offered. nullopt: nothing the client offered is
// (base64 variants never are).
std::optional<NegotiatedProtocol> negotiate_protocol(std::string_view header,
                                                     const ProtocolSet& offered = all_protocols());

struct ExecParams {
  std::string namespace_name;
  std::string pod;
  std::string pod_uid;  // only in the 4-segment form
  std::string container;
  std::vector<std::string> command;  // argv, never interpreted by a shell
  bool stdin = false;
  bool stdout = false;
  bool stderr = false;
  bool tty = false;
};

// Parses an origin-form target. Query flags are on for "1" or "true" (the API server sends
// "1"); a tty has no separate stderr, as in the kubelet.
tl::expected<ExecParams, std::string> parse_exec_target(std::string_view target);

// Percent-decoding of one path segment or query component ('+' is a space in the query).
std::optional<std::string> percent_decode(std::string_view text, bool plus_is_space);

// The kubelet's channel-3 payloads (metav1.Status JSON for v4/v5).
std::string success_status();
std::string exit_code_status(int exit_code, const std::vector<std::string>& command);
std::string internal_error_status(std::string_view message);

// What to send on channel 3 when the command ended with `exit_code` (v1–v3: the message as
// text for failures, nothing for success).
std::optional<std::string> final_error_channel_payload(StreamProtocol protocol, int exit_code,
                                                       const std::vector<std::string>& command);

}  // namespace kstack::nodesim
