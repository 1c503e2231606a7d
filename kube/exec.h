// Runs a command in a container through the API server's `pods/exec` subresource over WebSocket
// (docs/spec.md §5): argv array, bounded stdout/stderr, exit code, streamed stdin, deadline and
// cross-thread cancellation. Boost.Beast stays inside kube/exec.cpp.
//
// Protocol (k8s.io/apimachinery wsstream; "channel.k8s.io" family):
//  - GET /api/v1/namespaces/NS/pods/POD/exec?container=C&command=ARG0&command=ARG1...
//    &stdin=true&stdout=true&stderr=true[&tty=true], upgraded to WebSocket, offering
//    `Sec-WebSocket-Protocol: v5.channel.k8s.io, v4.channel.k8s.io, channel.k8s.io`. The server
//    picks the first one it supports in the client's order (the API server up to 1.29 forwards the
//    upgrade unchanged to the kubelet, so the node decides; 1.30+ serve v5 themselves).
//  - Every message is binary; its first byte is the channel: 0 stdin, 1 stdout, 2 stderr,
//    3 error/status, 4 resize (unused: no terminal). kstack sends stdin in messages of at most
//    kExecStdinFrameBytes.
//  - Exit status (channel 3): v4/v5 send a metav1.Status JSON — Success is exit 0; Failure with
//    reason NonZeroExitCode carries the code in details.causes[{reason: ExitCode, message: "3"}];
//    any other Failure is returned as a typed Error (kind from its code/reason). channel.k8s.io
//    (v1, also chosen when the server names no subprotocol) sends nothing on success and only a
//    text message on failure: a "command terminated with non-zero exit code" text is reported as
//    exit_code == kExitCodeUnknown (non-zero, value unknown) with the text in status_message;
//    other texts are a kInternal Error. A server that closes the WebSocket cleanly without any
//    status is taken as success, as client-go does.
//  - End of stdin. v5: the CLOSE signal, a message {255, 0} (channel 255, then the channel to
//    close), after the last stdin byte. v4 and v1 have no half-close: kstack then sends ONE EMPTY
//    STDIN MESSAGE (the single byte 0) as its end-of-stdin convention, which a real kubelet
//    ignores (it writes zero bytes). So where only v4 is spoken — a cluster older than 1.30 whose
//    kubelet answers — a command fed stdin must stop reading on its own: give it the byte count
//    (`head -c N`, a length-prefixed format) rather than relying on end of file. kstack's node
//    simulator (tests/nodesim) speaks v5 (the 1.20 API server passes the offer through to it),
//    and, told so, only v4 or only channel.k8s.io: the exec and setup e2e tests run against each.
//  - The exchange ends when the server closes the connection (after the status).
//
// Errors: a handshake answered with anything but 101 is the typed Error from the server's Status
// body (404 pod not found, 403 forbidden, 400 container not found / not running...). Transport,
// TLS, timeout and cancellation errors are as the HTTP transport's (kTransport, kTls, kTimeout,
// kCancelled). Each attempt is counted in client.metrics() as verb "EXEC" with the handshake's
// HTTP code ("101" on success, "<error>" without a response). Exec needs an https server.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/client.h"
#include "kube/error.h"
#include "kube/transport.h"

namespace kstack::kube {

inline constexpr std::size_t kDefaultExecMaxOutputBytes = 1u << 20;  // per stream
inline constexpr std::chrono::milliseconds kDefaultExecTimeout{60'000};
// Stdin is sent in messages of at most this many bytes (as kubectl's 32 KiB copy buffer).
inline constexpr std::size_t kExecStdinFrameBytes = 32u << 10;
// A single message from the server larger than this ends the exec with kResponseTooLarge
// (servers send stdout in pieces of a few KiB; this bounds memory against a broken one).
inline constexpr std::size_t kExecMaxMessageBytes = 4u << 20;
// ExecResult::exit_code when the command failed but the protocol (channel.k8s.io) does not say
// with which code.
inline constexpr int kExitCodeUnknown = -1;

struct ExecOptions {
  std::string container = "app";
  // Attach stdin even with no input (the command then reads end of file at once). Implied when
  // there is input: non-empty stdin_data, or any StdinSource.
  bool attach_stdin = false;
  // Allocate a terminal; the server then merges stderr into stdout (stderr is not requested).
  bool tty = false;
  // Output beyond these is read and dropped (the exit status comes after it); the result says so.
  std::size_t max_stdout_bytes = kDefaultExecMaxOutputBytes;
  std::size_t max_stderr_bytes = kDefaultExecMaxOutputBytes;
  // The whole exec: pod check, connect, handshake, command run, output read.
  std::chrono::milliseconds timeout = kDefaultExecTimeout;
  // TCP connect + TLS handshake (also bounded by `timeout`).
  std::chrono::milliseconds connect_timeout = kDefaultConnectTimeout;
  // docs/spec.md §5: the container ID kstack is configuring. When set, the pod is read first and
  // the exec refused with kConflict (nothing is run) unless status.containerStatuses[name ==
  // container].containerID equals it.
  std::optional<std::string> expected_container_id;
};

struct ExecResult {
  int exit_code = 0;  // 0..255, or kExitCodeUnknown (see the protocol notes above)
  std::string stdout_data;
  std::string stderr_data;
  bool stdout_truncated = false;  // more than max_stdout_bytes arrived
  bool stderr_truncated = false;
  std::string protocol;        // negotiated subprotocol, e.g. "v4.channel.k8s.io"
  std::string status_message;  // the server's message for a non-zero exit, if any
};

// Supplies stdin piece by piece: the next piece (any size, valid until the next call), or
// nullopt at end of input. Called on the thread that called exec, only while the previous piece
// has been sent, so at most one piece is held at a time.
using StdinSource = std::function<std::optional<std::string_view>()>;

// Runs `argv` (argv[0] is the program; no shell is involved unless argv says so) in the
// container. A non-zero exit is a successful Result with that exit_code; an Error means the
// command's outcome is unknown or it did not run.
Result<ExecResult> exec(Client& client, std::string_view ns, std::string_view pod,
                        const std::vector<std::string>& argv, std::string_view stdin_data = {},
                        const ExecOptions& options = {}, const CancelToken& cancel = {});

// The same with stdin streamed from `stdin_source` (large inputs need not be in memory at once;
// nothing is copied but the masking Beast must do per message).
Result<ExecResult> exec_streaming(Client& client, std::string_view ns, std::string_view pod,
                                  const std::vector<std::string>& argv,
                                  const StdinSource& stdin_source, const ExecOptions& options = {},
                                  const CancelToken& cancel = {});

// Pure pieces of the protocol, exposed for unit tests (tests/unit/kube/exec_frame_test.cpp).
namespace exec_detail {

enum class Protocol { kV5, kV4, kV1 };
inline constexpr std::string_view kProtocolV5 = "v5.channel.k8s.io";
inline constexpr std::string_view kProtocolV4 = "v4.channel.k8s.io";
inline constexpr std::string_view kProtocolV1 = "channel.k8s.io";
// The Sec-WebSocket-Protocol offer, most preferred first.
inline constexpr std::string_view kProtocolOffer =
    "v5.channel.k8s.io, v4.channel.k8s.io, channel.k8s.io";
// The server's choice; "" (no header) is channel.k8s.io as in wsstream. nullopt: not offered.
std::optional<Protocol> parse_protocol(std::string_view header);

inline constexpr unsigned char kStdin = 0;
inline constexpr unsigned char kStdout = 1;
inline constexpr unsigned char kStderr = 2;
inline constexpr unsigned char kError = 3;
inline constexpr unsigned char kResize = 4;
inline constexpr unsigned char kCloseSignal = 255;  // v5: {255, channel} closes that channel

struct Frame {
  unsigned char channel = 0;
  std::string_view data;
};
// nullopt for an empty message (which carries no channel).
std::optional<Frame> decode_frame(std::string_view message);
std::string encode_frame(unsigned char channel, std::string_view data);
// What kstack sends after the last stdin byte: {255, 0} on v5, an empty stdin message {0} else.
std::string stdin_eof_frame(Protocol protocol);

// "/api/v1/namespaces/NS/pods/POD/exec?container=..&command=..&...": every argv element is
// percent-encoded (empty ones kept), so it arrives literally. kInvalidArgument for an empty argv,
// a NUL byte in an argument or an unusable namespace/pod name.
Result<std::string> exec_path(std::string_view ns, std::string_view pod,
                              const std::vector<std::string>& argv, const ExecOptions& options,
                              bool attach_stdin);

struct ExitStatus {
  int exit_code = 0;
  std::string message;  // the server's message for a non-zero exit
};
// Interprets everything received on the error channel (empty when nothing came).
Result<ExitStatus> parse_exit_status(Protocol protocol, std::string_view error_channel);

// docs/spec.md §5's check: containerID of `container` in the pod's status ("" if it has none).
std::string container_id(const boost::json::value& pod, std::string_view container);

}  // namespace exec_detail
}  // namespace kstack::kube
