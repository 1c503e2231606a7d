// Bearer-token sources: a fixed token, and a token file re-read periodically like client-go's
// cachingTokenSource (projected service-account tokens are rotated on disk by the kubelet).
// The exec credential plugin lives in exec_plugin.cpp.
#include <array>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <utility>

#include <fcntl.h>
#include <unistd.h>

#include "kube/config.h"
#include "kube/config_detail.h"

namespace kstack::kube {
namespace detail {

std::string errno_message(int err) {
  std::array<char, 256> buf{};
  // g++ defines _GNU_SOURCE: the GNU strerror_r returns the message (maybe not in buf).
  return ::strerror_r(err, buf.data(), buf.size());
}

Result<std::string> read_file_limited(const std::filesystem::path& path, std::size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return make_error(ErrorKind::kConfig,
                      "cannot read " + path.string() + ": " + errno_message(errno));
  }
  std::string content;
  std::array<char, 16384> buf{};
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return make_error(ErrorKind::kConfig,
                        "cannot read " + path.string() + ": " + errno_message(err));
    }
    if (n == 0) break;
    if (content.size() + static_cast<std::size_t>(n) > max_bytes) {
      ::close(fd);
      return make_error(ErrorKind::kConfig, path.string() + " is larger than " +
                                                std::to_string(max_bytes) + " bytes, refusing it");
    }
    content.append(buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  return content;
}

std::string_view trim(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n\v\f";
  const auto first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(kSpace);
  return text.substr(first, last - first + 1);
}

}  // namespace detail

namespace {

class StaticToken final : public CredentialSource {
 public:
  explicit StaticToken(std::string token) : token_(std::move(token)) {}
  Result<std::string> bearer_token() override { return token_; }

 private:
  const std::string token_;
};

class TokenFile final : public CredentialSource {
 public:
  TokenFile(std::filesystem::path path, std::chrono::seconds period, Clock clock)
      : path_(std::move(path)), period_(period), clock_(std::move(clock)) {
    if (!clock_) clock_ = [] { return std::chrono::steady_clock::now(); };
  }

  Result<std::string> bearer_token() override {
    std::lock_guard lock(mutex_);
    const auto now = clock_();
    if (token_ && !stale_ && now - last_read_ < period_) return *token_;
    auto read = read_token();
    if (read) {
      token_ = std::move(*read);
      last_read_ = now;
      stale_ = false;
      return *token_;
    }
    // The file may be mid-rotation: keep serving the token we have. last_read_ stays old, so
    // the next call tries again.
    if (token_) return *token_;
    return tl::unexpected(std::move(read.error()));
  }

  void invalidate() override {
    std::lock_guard lock(mutex_);
    stale_ = true;
  }

 private:
  Result<std::string> read_token() const {
    auto content = detail::read_file_limited(path_, detail::kMaxCredentialFileBytes);
    if (!content) {
      return make_error(ErrorKind::kConfig, "token file: " + content.error().message);
    }
    std::string token(detail::trim(*content));
    if (token.empty()) {
      return make_error(ErrorKind::kConfig, "token file " + path_.string() + " is empty");
    }
    return token;
  }

  const std::filesystem::path path_;
  const std::chrono::seconds period_;
  Clock clock_;
  std::mutex mutex_;
  std::optional<std::string> token_;
  std::chrono::steady_clock::time_point last_read_{};
  bool stale_ = false;
};

}  // namespace

std::shared_ptr<CredentialSource> static_token(std::string token) {
  return std::make_shared<StaticToken>(std::move(token));
}

std::shared_ptr<CredentialSource> token_file(std::filesystem::path path,
                                             std::chrono::seconds period, Clock clock) {
  return std::make_shared<TokenFile>(std::move(path), period, std::move(clock));
}

}  // namespace kstack::kube
