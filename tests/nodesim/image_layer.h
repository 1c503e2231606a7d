// An image's files in a container's sandbox (docs/nodesim.md, "Images"): the files of its
// COPY/ADD instructions are copied into the container's directory at each start (so they are
// wiped and copied again on a restart, as a container's writable layer), with --chown/--chmod
// applied. Those for the private directories (/etc, /opt, /var, ...) land there; the others are
// bound at their destination: on bwrap's fresh root (/app) directly, under the host's read-only
// /usr through a tmpfs over the deepest existing directory, in which the host's entries are
// bound again (a merge of the image's files with the host's, as an image layer is).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <tl/expected.hpp>

#include "tests/nodesim/image.h"

namespace kstack::nodesim {

// Copies the image's files for a container whose private tree is `root` (prepare_root done:
// root/<private dir>, root/etc with the passwd and group files that --chown names resolve in)
// and returns the bwrap arguments that mount the rest, to come after the private dirs' binds
// and before the volumes'. Also creates the WORKDIR. `host` is the host's root ("/"; tests
// give another tree).
tl::expected<std::vector<std::string>, std::string> place_image_files(
    const Image& image, const std::filesystem::path& root, const std::filesystem::path& host = "/");

}  // namespace kstack::nodesim
