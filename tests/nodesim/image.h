// Container images of the simulated nodes (docs/nodesim.md, "Images"): an image is registered
// as a reference plus a build context directory, and what the simulator takes from it is read
// from the LAST stage of <context>/Dockerfile. The host's programs stand in for the image's
// base and its RUN lines (neither is run); COPY/ADD of local files, ENV, WORKDIR, USER,
// ENTRYPOINT and CMD apply. Pure apart from reading the Dockerfile and listing the context.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <sys/stat.h>
#include <tl/expected.hpp>

namespace kstack::nodesim {

// One COPY or ADD of files from the build context.
struct ImageCopy {
  std::vector<std::filesystem::path> sources;  // inside the context, wildcards expanded
  // Absolute (a relative one was joined to the WORKDIR then); a trailing '/' or several
  // sources make it a directory, as in Docker.
  std::string destination;
  std::string chown;            // --chown as written (user[:group]); "" = root
  std::optional<mode_t> chmod;  // --chmod (octal)
  std::string where;            // "<Dockerfile>:<line>", for errors later on
};

struct Image {
  std::string ref;                                       // as registered
  std::filesystem::path context;                         // the build context directory
  std::vector<ImageCopy> copies;                         // in Dockerfile order
  std::vector<std::pair<std::string, std::string>> env;  // ENV, in order (later wins)
  std::string working_dir;                               // WORKDIR (absolute), "" = /
  std::string user;                                      // USER as written, "" = root
  std::vector<std::string> entrypoint;  // exec form; a shell form is ["/bin/sh", "-c", text]
  std::vector<std::string> cmd;
};

// Parses a Dockerfile's text; `file` names it in errors ("<file>:<line>: <INSTRUCTION>: ...").
// COPY/ADD sources are resolved in `context` (they must exist there and stay inside it).
tl::expected<Image, std::string> parse_dockerfile(std::string_view text,
                                                  const std::filesystem::path& context,
                                                  const std::string& file);

// The Debian packages named by `apt-get install` (or `apt install`) in a Dockerfile's RUN
// lines, all stages, version pins (pkg=1.2) and target releases (pkg/bookworm) removed: the
// programs the test machines must have for the image to run here (RUN is not run).
tl::expected<std::vector<std::string>, std::string> apt_installed_packages(std::string_view text,
                                                                           const std::string& file);

// Reads <context>/Dockerfile.
tl::expected<Image, std::string> read_image(const std::string& ref,
                                            const std::filesystem::path& context);

// "kstack/etcd:3.4.23" as a container runtime compares references: without "docker.io/" and
// "library/", with ":latest" when there is no tag or digest.
std::string normalize_image_ref(std::string_view ref);

// The registered images of a node, by normalized reference.
class ImageSet {
 public:
  // `images`: reference -> context directory (--image=<ref>=<dir>). Every Dockerfile is read
  // now: the first error is returned.
  static tl::expected<ImageSet, std::string> load(
      const std::map<std::string, std::filesystem::path>& images);
  void add(Image image);
  // nullptr when `ref` is not registered (the container then runs as before images existed).
  std::shared_ptr<const Image> find(std::string_view ref) const;
  bool empty() const { return images_.empty(); }

 private:
  std::map<std::string, std::shared_ptr<const Image>> images_;
};

// A process's identity inside a container.
struct UserIds {
  unsigned uid = 0;
  unsigned gid = 0;
  std::string home = "/root";
};

// Resolves a USER value ("name", "uid", "name:group", "uid:gid", "" = root) against the
// passwd and group files in `etc`, as Docker does: a name must exist; a numeric uid without
// an entry gets gid 0 and home "/"; the group defaults to the user's primary group.
tl::expected<UserIds, std::string> resolve_user(const std::string& user,
                                                const std::filesystem::path& etc);

// The process of a container, by Kubernetes' rules: a `command` replaces the ENTRYPOINT and
// drops the CMD; `args` replace the CMD (empty lists count as not given, as in Kubernetes).
// Empty when there is nothing to run.
std::vector<std::string> image_process(const Image& image, const std::vector<std::string>& command,
                                       const std::vector<std::string>& args);

}  // namespace kstack::nodesim
