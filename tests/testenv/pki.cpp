// PKI generation for the test control plane (see pki.h). The openssl CLI keeps this short and
// readable; three RSA-2048 keys take about half a second.
#include "tests/testenv/pki.h"

#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/core.h>

#include "tests/testenv/process.h"

namespace kstack::testenv {
namespace {

constexpr const char* kKeySpec = "rsa:2048";
constexpr const char* kCaDays = "3650";
constexpr const char* kServingDays = "365";

tl::expected<void, std::string> openssl(std::vector<std::string> args) {
  args.insert(args.begin(), "openssl");
  auto r = run_command(args);
  if (!r) return tl::unexpected(r.error());
  if (!r->ok()) {
    return tl::unexpected(fmt::format("openssl {} failed ({}): {}", args[1], r->exit_code, r->err));
  }
  return {};
}

tl::expected<void, std::string> write_file(const std::filesystem::path& path,
                                           const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) return tl::unexpected(fmt::format("cannot write {}", path.string()));
  return {};
}

}  // namespace

tl::expected<Pki, std::string> make_pki(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return tl::unexpected(fmt::format("mkdir {}: {}", dir.string(), ec.message()));
  Pki pki{dir / "ca.crt",
          dir / "ca.key",
          dir / "apiserver.crt",
          dir / "apiserver.key",
          dir / "sa.key",
          dir / "sa.pub",
          {}};
  auto csr = dir / "apiserver.csr";
  auto ext = dir / "apiserver.ext";

  auto r = openssl({"req", "-x509", "-newkey", kKeySpec, "-nodes", "-keyout", pki.ca_key, "-out",
                    pki.ca_cert, "-days", kCaDays, "-subj", "/CN=kstack-testenv-ca", "-addext",
                    "basicConstraints=critical,CA:TRUE", "-addext",
                    "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"})
               .and_then([&] {
                 return openssl({"req", "-new", "-newkey", kKeySpec, "-nodes", "-keyout",
                                 pki.serving_key, "-out", csr, "-subj", "/CN=kube-apiserver"});
               })
               .and_then([&] {
                 return write_file(
                     ext, fmt::format("subjectAltName={}\n"
                                      "basicConstraints=CA:FALSE\n"
                                      "keyUsage=critical,digitalSignature,keyEncipherment\n"
                                      "extendedKeyUsage=serverAuth\n",
                                      kServingSans));
               })
               .and_then([&] {
                 return openssl({"x509", "-req", "-in", csr, "-CA", pki.ca_cert, "-CAkey",
                                 pki.ca_key, "-CAcreateserial", "-out", pki.serving_cert, "-days",
                                 kServingDays, "-extfile", ext});
               })
               .and_then([&] {
                 return openssl({"genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                                 "-out", pki.sa_key});
               })
               .and_then([&] {
                 return openssl({"pkey", "-in", pki.sa_key, "-pubout", "-out", pki.sa_pub});
               });
  if (!r) return tl::unexpected(r.error());

  std::ifstream in(pki.ca_cert, std::ios::binary);
  std::ostringstream pem;
  pem << in.rdbuf();
  pki.ca_pem = pem.str();
  if (pki.ca_pem.empty()) return tl::unexpected(fmt::format("{} is empty", pki.ca_cert.string()));
  return pki;
}

}  // namespace kstack::testenv
