// The Dockerfile reader (see image.h).
#include "tests/nodesim/image.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>
#include <glob.h>

#include "tests/nodesim/dockerfile_syntax.h"

namespace kstack::nodesim {

namespace fs = std::filesystem;
using dockerfile::exec_or_shell;
using dockerfile::expand_all;
using dockerfile::Instruction;
using dockerfile::instructions;
using dockerfile::trim;
using dockerfile::Vars;
using dockerfile::words;

namespace {

std::string join_path(const std::string& base, const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  return (fs::path(base.empty() ? "/" : base) / path).string();
}

bool is_archive_name(const std::string& name) {
  for (const char* ext : {".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz"}) {
    const std::string e(ext);
    if (name.size() >= e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0) {
      return true;
    }
  }
  return false;
}

// The sources of a COPY/ADD, wildcards expanded, each inside the context.
tl::expected<std::vector<fs::path>, std::string> context_sources(
    const std::vector<std::string>& sources, const fs::path& context, bool add) {
  const fs::path root = fs::weakly_canonical(context);
  std::vector<fs::path> out;
  for (const auto& source : sources) {
    if (source.find("://") != std::string::npos || source.rfind("git@", 0) == 0) {
      return tl::unexpected(fmt::format("remote source {} is not supported", source));
    }
    if (add && is_archive_name(source)) {
      return tl::unexpected(fmt::format(
          "{}: ADD extracts local archives; not supported here, COPY the files instead", source));
    }
    const fs::path pattern = (root / fs::path(source).relative_path()).lexically_normal();
    const auto rel = pattern.lexically_relative(root);
    if (rel.empty() || *rel.begin() == "..") {
      return tl::unexpected(fmt::format("source {} is outside the build context", source));
    }
    glob_t g{};
    const int r = ::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &g);
    std::vector<fs::path> found;
    if (r == 0) {
      for (std::size_t i = 0; i < g.gl_pathc; ++i) {
        fs::path p = fs::path(g.gl_pathv[i]).lexically_normal();
        found.push_back(p.has_filename() ? p : p.parent_path());  // "conf/" -> "conf"
      }
    }
    ::globfree(&g);
    if (found.empty()) {
      return tl::unexpected(
          fmt::format("source {} not found in the build context {}", source, context.string()));
    }
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

// The state of the stage being read.
struct Stage {
  Image image;
  Vars vars;  // ARG defaults and ENV, for substitution
  std::vector<std::string> shell = {"/bin/sh", "-c"};
};

tl::expected<void, std::string> copy_instruction(Stage& stage, const Instruction& ins,
                                                 const fs::path& context,
                                                 const std::string& where) {
  ImageCopy copy;
  copy.where = where;
  // Flags first (--chown=..., no spaces), then the JSON form or whitespace-separated words.
  std::string rest = ins.args;
  while (rest.rfind("--", 0) == 0) {
    const auto end = rest.find_first_of(" \t");
    const std::string item = expand_all(rest.substr(0, end), stage.vars);
    rest = end == std::string::npos ? std::string() : trim(rest.substr(end));
    const auto eq = item.find('=');
    const std::string flag = item.substr(0, eq);
    const std::string value = eq == std::string::npos ? std::string() : item.substr(eq + 1);
    if (flag == "--from") {
      return tl::unexpected(fmt::format(
          "--from={} is not supported: only files of the build context can be copied (the "
          "simulator does not build stages)",
          value));
    }
    if (flag == "--chown") {
      copy.chown = value;
    } else if (flag == "--chmod") {
      char* tail = nullptr;
      const unsigned long mode = std::strtoul(value.c_str(), &tail, 8);
      if (value.empty() || *tail != '\0' || mode > 07777) {
        return tl::unexpected(fmt::format("--chmod={}: expected an octal mode", value));
      }
      copy.chmod = static_cast<mode_t>(mode);
    } else if (flag != "--link") {
      return tl::unexpected(fmt::format("flag {} is not supported", flag));
    }
  }
  std::vector<std::string> args;
  if (!rest.empty() && rest[0] == '[') {
    args = exec_or_shell(rest, {});
    for (auto& a : args) a = expand_all(a, stage.vars);
  } else {
    auto list = words(rest, stage.vars);
    if (!list) return tl::unexpected(list.error());
    args = std::move(*list);
  }
  if (args.size() < 2) return tl::unexpected(std::string("expected sources and a destination"));
  const std::string dest = args.back();
  const std::vector<std::string> sources(args.begin(), args.end() - 1);
  auto found = context_sources(sources, context, ins.keyword == "ADD");
  if (!found) return tl::unexpected(found.error());
  copy.sources = std::move(*found);
  copy.destination = join_path(stage.image.working_dir, dest);
  if (dest.back() == '/' && copy.destination.back() != '/') copy.destination += '/';
  stage.image.copies.push_back(std::move(copy));
  return {};
}

tl::expected<void, std::string> env_instruction(Stage& stage, const std::string& args) {
  const auto first_space = args.find_first_of(" \t");
  const auto first_eq = args.find('=');
  if (first_eq == std::string::npos ||
      (first_space != std::string::npos && first_space < first_eq)) {
    // Legacy form: ENV name value with spaces
    if (first_space == std::string::npos) return tl::unexpected(std::string("expected a value"));
    auto value = words(args.substr(first_space), stage.vars);
    if (!value) return tl::unexpected(value.error());
    std::string joined;
    for (const auto& w : *value) joined += (joined.empty() ? "" : " ") + w;
    const std::string name = args.substr(0, first_space);
    stage.image.env.emplace_back(name, joined);
    stage.vars[name] = joined;
    return {};
  }
  auto pairs = words(args, stage.vars);
  if (!pairs) return tl::unexpected(pairs.error());
  for (const auto& pair : *pairs) {
    const auto eq = pair.find('=');
    if (eq == std::string::npos || eq == 0) {
      return tl::unexpected(fmt::format("expected name=value, got \"{}\"", pair));
    }
    stage.image.env.emplace_back(pair.substr(0, eq), pair.substr(eq + 1));
    stage.vars[pair.substr(0, eq)] = pair.substr(eq + 1);
  }
  return {};
}

// One word (WORKDIR, USER): the words joined back with single spaces.
tl::expected<std::string, std::string> one_word(const std::string& args, const Vars& vars) {
  auto list = words(args, vars);
  if (!list) return tl::unexpected(list.error());
  std::string out;
  for (const auto& w : *list) out += (out.empty() ? "" : " ") + w;
  if (out.empty()) return tl::unexpected(std::string("expected a value"));
  return out;
}

tl::expected<void, std::string> apply(Stage& stage, const Instruction& ins, const fs::path& context,
                                      const std::string& where) {
  const auto& k = ins.keyword;
  if (k == "RUN" || k == "EXPOSE" || k == "LABEL" || k == "MAINTAINER" || k == "VOLUME" ||
      k == "STOPSIGNAL" || k == "HEALTHCHECK" || k == "ONBUILD") {
    return {};  // RUN: the host's programs stand in for what it would install
  }
  if (k == "ARG") {
    const auto eq = ins.args.find('=');
    const std::string name = trim(ins.args.substr(0, eq));
    if (stage.vars.count(name) == 0) {
      stage.vars[name] =
          eq == std::string::npos ? std::string() : expand_all(trim(ins.args.substr(eq + 1)), {});
    }
    return {};
  }
  if (k == "COPY" || k == "ADD") return copy_instruction(stage, ins, context, where);
  if (k == "ENV") return env_instruction(stage, ins.args);
  if (k == "WORKDIR") {
    auto dir = one_word(ins.args, stage.vars);
    if (!dir) return tl::unexpected(dir.error());
    stage.image.working_dir =
        fs::path(join_path(stage.image.working_dir, *dir)).lexically_normal().string();
    if (stage.image.working_dir.size() > 1 && stage.image.working_dir.back() == '/') {
      stage.image.working_dir.pop_back();
    }
    return {};
  }
  if (k == "USER") {
    auto user = one_word(ins.args, stage.vars);
    if (!user) return tl::unexpected(user.error());
    stage.image.user = *user;
    return {};
  }
  if (k == "SHELL") {
    auto shell = exec_or_shell(ins.args, {});
    if (ins.args.empty() || ins.args[0] != '[' || shell.empty()) {
      return tl::unexpected(std::string("expected a JSON array"));
    }
    stage.shell = std::move(shell);
    return {};
  }
  if (k == "ENTRYPOINT") {
    stage.image.entrypoint = exec_or_shell(ins.args, stage.shell);
    return {};
  }
  if (k == "CMD") {
    stage.image.cmd = exec_or_shell(ins.args, stage.shell);
    return {};
  }
  return tl::unexpected(std::string("unknown instruction"));
}

std::map<std::string, std::vector<std::string>> read_table(const fs::path& file) {
  std::map<std::string, std::vector<std::string>> rows;  // by first field
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::istringstream parts(line);
    for (std::string f; std::getline(parts, f, ':');) fields.push_back(f);
    if (!fields.empty() && !fields[0].empty() && fields[0][0] != '#') rows[fields[0]] = fields;
  }
  return rows;
}

std::optional<unsigned> number(const std::string& s) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) != 0;
      })) {
    return std::nullopt;
  }
  return static_cast<unsigned>(std::stoul(s));
}

}  // namespace

tl::expected<Image, std::string> parse_dockerfile(std::string_view text, const fs::path& context,
                                                  const std::string& file) {
  auto list = instructions(text, file);
  if (!list) return tl::unexpected(list.error());
  std::optional<Stage> stage;
  for (const auto& ins : *list) {
    const std::string where = fmt::format("{}:{}", file, ins.line);
    if (ins.keyword == "FROM") {
      stage.emplace();  // only the last stage counts; its base is the host
      continue;
    }
    if (!stage) {
      if (ins.keyword == "ARG") continue;  // ARGs before FROM only parameterize FROM
      return tl::unexpected(
          fmt::format("{}: {}: instruction before the first FROM", where, ins.keyword));
    }
    if (auto r = apply(*stage, ins, context, where); !r) {
      return tl::unexpected(fmt::format("{}: {}: {}", where, ins.keyword, r.error()));
    }
  }
  if (!stage) return tl::unexpected(fmt::format("{}: no FROM instruction", file));
  return std::move(stage->image);
}

tl::expected<std::vector<std::string>, std::string> apt_installed_packages(
    std::string_view text, const std::string& file) {
  auto list = instructions(text, file);
  if (!list) return tl::unexpected(list.error());
  std::vector<std::string> out;
  for (const auto& ins : *list) {
    if (ins.keyword != "RUN") continue;
    // Commands are separated by shell operators; words are enough for package lists.
    std::vector<std::string> command;
    auto finish = [&] {
      auto at = std::find(command.begin(), command.end(), "install");
      const bool apt = at != command.end() && (std::find(command.begin(), at, "apt-get") != at ||
                                               std::find(command.begin(), at, "apt") != at);
      if (apt) {
        for (auto it = at + 1; it != command.end(); ++it) {
          if (it->empty() || (*it)[0] == '-') continue;
          out.push_back(it->substr(0, it->find_first_of("=/")));
        }
      }
      command.clear();
    };
    std::istringstream words_in(ins.args);
    for (std::string w; words_in >> w;) {
      if (w == "&&" || w == "||" || w == ";" || w == "|") {
        finish();
        continue;
      }
      const bool ends = w.back() == ';';
      if (ends) w.pop_back();
      if (!w.empty()) command.push_back(w);
      if (ends) finish();
    }
    finish();
  }
  return out;
}

tl::expected<Image, std::string> read_image(const std::string& ref, const fs::path& context) {
  const fs::path file = context / "Dockerfile";
  std::ifstream in(file);
  if (!in) return tl::unexpected(fmt::format("image {}: cannot read {}", ref, file.string()));
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  auto image = parse_dockerfile(text, context, file.string());
  if (!image) return tl::unexpected(fmt::format("image {}: {}", ref, image.error()));
  image->ref = ref;
  image->context = context;
  return image;
}

std::string normalize_image_ref(std::string_view ref) {
  std::string r(ref);
  if (r.rfind("docker.io/", 0) == 0) r.erase(0, 10);
  if (r.rfind("library/", 0) == 0) r.erase(0, 8);
  const auto slash = r.rfind('/');
  const std::string last = slash == std::string::npos ? r : r.substr(slash + 1);
  if (last.find(':') == std::string::npos && r.find('@') == std::string::npos) r += ":latest";
  return r;
}

tl::expected<ImageSet, std::string> ImageSet::load(const std::map<std::string, fs::path>& images) {
  ImageSet set;
  for (const auto& [ref, context] : images) {
    auto image = read_image(ref, context);
    if (!image) return tl::unexpected(image.error());
    set.add(std::move(*image));
  }
  return set;
}

void ImageSet::add(Image image) {
  const std::string key = normalize_image_ref(image.ref);
  images_[key] = std::make_shared<const Image>(std::move(image));
}

std::shared_ptr<const Image> ImageSet::find(std::string_view ref) const {
  auto it = images_.find(normalize_image_ref(ref));
  return it == images_.end() ? nullptr : it->second;
}

tl::expected<UserIds, std::string> resolve_user(const std::string& user, const fs::path& etc) {
  if (user.empty()) return UserIds{};
  const auto colon = user.find(':');
  const std::string name = user.substr(0, colon);
  const auto passwd = read_table(etc / "passwd");
  UserIds ids;
  if (auto uid = number(name)) {
    ids.uid = *uid;
    ids.home = "/";
    for (const auto& [n, row] : passwd) {
      if (row.size() >= 6 && row[2] == name) {
        ids.gid = number(row[3]).value_or(0);
        ids.home = row[5];
      }
    }
  } else {
    auto it = passwd.find(name);
    if (it == passwd.end() || it->second.size() < 6) {
      return tl::unexpected(
          fmt::format("unable to find user {}: no matching entries in passwd file", name));
    }
    ids.uid = number(it->second[2]).value_or(0);
    ids.gid = number(it->second[3]).value_or(0);
    ids.home = it->second[5];
  }
  if (colon != std::string::npos) {
    const std::string group = user.substr(colon + 1);
    if (auto gid = number(group)) {
      ids.gid = *gid;
    } else {
      const auto groups = read_table(etc / "group");
      auto it = groups.find(group);
      if (it == groups.end() || it->second.size() < 3) {
        return tl::unexpected(
            fmt::format("unable to find group {}: no matching entries in group file", group));
      }
      ids.gid = number(it->second[2]).value_or(0);
    }
  }
  return ids;
}

std::vector<std::string> image_process(const Image& image, const std::vector<std::string>& command,
                                       const std::vector<std::string>& args) {
  std::vector<std::string> argv = command.empty() ? image.entrypoint : command;
  const auto& rest = !args.empty() ? args : (command.empty() ? image.cmd : args);
  argv.insert(argv.end(), rest.begin(), rest.end());
  return argv;
}

}  // namespace kstack::nodesim
