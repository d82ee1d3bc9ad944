// The command line of sonic's programs, read one way in all of them (GNU conventions, as
// getopt_long reads them): "--name value" and "--name=value", short options "-m value", "-mvalue"
// and grouped flags "-qv", "--" ends the options, -h/--help prints the help generated from the
// options declared, --version prints the program's and sonic's version. Exit statuses are the
// same in every program: 0 success, 1 a failure while running, 2 a mistake on the command line.
//
// A small parser of our own rather than a library: Debian's candidates (Boost.Program_options,
// cxxopts, CLI11) would add a build dependency to every tool for ~200 lines, and none of them
// words its errors as these programs must ("--window takes a number above 0, not '-1'").
#pragma once

#include <sonic/version.hpp>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace sonic::tools {

/// The exit statuses of every sonic program.
enum ExitStatus : int { kExitOk = 0, kExitFailure = 1, kExitUsage = 2 };

/// A mistake on the command line: reported with a pointer to --help, exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// "a,b,c" → {"a", "b", "c"}, for options that take a list; an empty item is a usage error.
inline std::vector<std::string> comma_list(const std::string& flag, const std::string& text) {
  std::vector<std::string> items;
  std::size_t start = 0;
  for (;;) {
    std::size_t comma = text.find(',', start);
    items.push_back(text.substr(start, comma == std::string::npos ? comma : comma - start));
    if (items.back().empty()) throw UsageError(flag + " has an empty item in '" + text + "'");
    if (comma == std::string::npos) return items;
    start = comma + 1;
  }
}

/// The options a program takes, their help, and the reading of argv.
class CommandLine {
 public:
  using OnFlag = std::function<void()>;
  using OnValue = std::function<void(const std::string& value)>;

  /// `usage` is the help's first lines ("usage: sonic-infer [options] MODEL INPUT=SPEC..."
  /// and what the program does).
  CommandLine(std::string program, std::string usage)
      : program_(std::move(program)), usage_(std::move(usage)) {}

  /// An option without a value. `names` is "--long", "-s" or "-s, --long"; `help` is wrapped
  /// to the help's width (a newline in it is a space).
  CommandLine& flag(const std::string& names, std::string help, OnFlag on) {
    add(names, "", std::move(help), [on = std::move(on)](const std::string&) { on(); });
    return *this;
  }
  /// An option with a value, shown as `value_name` in the help ("--url URL").
  CommandLine& option(const std::string& names, std::string value_name, std::string help,
                      OnValue on) {
    add(names, std::move(value_name), std::move(help), std::move(on));
    return *this;
  }
  /// A heading in the help before the options declared next.
  CommandLine& section(std::string title) {
    Entry heading;
    heading.section = std::move(title);
    entries_.push_back(std::move(heading));
    return *this;
  }
  /// Text printed after the options (what arguments mean, exit statuses).
  CommandLine& epilogue(std::string text) {
    epilogue_ = std::move(text);
    return *this;
  }

  /// Reads argv, calling each option's handler in order; returns the other arguments.
  /// -h/--help and --version print to stdout and exit(0). Throws UsageError for an unknown
  /// option, a missing or unexpected value, and whatever a handler throws as UsageError.
  std::vector<std::string> parse(int argc, const char* const* argv) const {
    std::vector<std::string> positional;
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      auto next_value = [&](const std::string& shown) -> std::string {
        if (i + 1 >= argc) throw UsageError(shown + " needs a value");
        return argv[++i];
      };
      if (arg == "--") {
        positional.insert(positional.end(), argv + i + 1, argv + argc);
        break;
      }
      if (arg.size() < 2 || arg[0] != '-') {
        positional.push_back(arg);
      } else if (arg[1] == '-') {
        std::size_t eq = arg.find('=');
        std::string name = arg.substr(0, eq);
        const Entry& entry = find_long(name);
        if (entry.value_name.empty()) {
          if (eq != std::string::npos) throw UsageError(name + " takes no value");
          entry.on({});
        } else {
          entry.on(eq != std::string::npos ? arg.substr(eq + 1) : next_value(name));
        }
      } else {
        // -abc: flags a and b, then c, which may take the rest ("-m model" or "-mmodel").
        for (std::size_t at = 1; at < arg.size(); ++at) {
          const Entry& entry = find_short(arg[at]);
          if (entry.value_name.empty()) {
            entry.on({});
            continue;
          }
          std::string shown = std::string("-") + arg[at];
          entry.on(at + 1 < arg.size() ? arg.substr(at + 1) : next_value(shown));
          break;
        }
      }
    }
    return positional;
  }

  /// The help: usage, the options by section (their help text wrapped to 88 columns), the
  /// epilogue.
  void print_help(std::ostream& out) const {
    constexpr std::size_t kHelpColumn = 26, kWidth = 88;
    out << usage_ << '\n';
    auto print = [&](std::string left, const std::string& help) {
      out << left;
      std::size_t column = left.size();
      if (column + 2 > kHelpColumn) {
        out << '\n';
        column = 0;
      }
      out << std::string(kHelpColumn - column, ' ');
      column = kHelpColumn;
      std::size_t start = 0;
      while (start < help.size()) {  // word by word; a newline in `help` is a space
        std::size_t end = help.find_first_of(" \n", start);
        if (end == std::string::npos) end = help.size();
        std::string word = help.substr(start, end - start);
        start = end + 1;
        if (word.empty()) continue;
        if (column > kHelpColumn && column + 1 + word.size() > kWidth) {
          out << '\n' << std::string(kHelpColumn, ' ');
          column = kHelpColumn;
        }
        if (column > kHelpColumn) {
          out << ' ';
          ++column;
        }
        out << word;
        column += word.size();
      }
      out << '\n';
    };
    for (const Entry& entry : entries_) {
      if (!entry.section.empty()) {
        out << '\n' << entry.section << '\n';
        continue;
      }
      print("  " + entry.names + (entry.value_name.empty() ? "" : " " + entry.value_name),
            entry.help);
    }
    print("  -h, --help", "print this help");
    print("  --version", "print the program's version");
    if (!epilogue_.empty()) out << '\n' << epilogue_;
  }

  /// Runs a program's body with the statuses and messages every sonic program uses: a usage
  /// error prints "PROGRAM: what (see PROGRAM --help)" and returns 2; any other exception
  /// prints "PROGRAM: what" and returns 1.
  template <typename Body>
  static int run(const std::string& program, Body&& body) noexcept {
    try {
      return body();
    } catch (const UsageError& e) {
      std::cout.flush();
      std::cerr << program << ": " << e.what() << " (see " << program << " --help)\n";
      return kExitUsage;
    } catch (const std::exception& e) {
      std::cout.flush();
      std::cerr << program << ": " << e.what() << '\n';
      return kExitFailure;
    }
  }

 private:
  struct Entry {
    std::string short_name;  ///< "-m", or empty
    std::string long_name;   ///< "--model"
    std::string value_name;  ///< empty for a flag
    std::string section;     ///< a heading instead of an option
    std::string names;       ///< as shown in the help: "-m, --model"
    std::string help;
    OnValue on;
  };

  void add(const std::string& names, std::string value_name, std::string help, OnValue on) {
    Entry entry;
    entry.names = names;
    std::size_t comma = names.find(", ");
    if (comma != std::string::npos) {
      entry.short_name = names.substr(0, comma);
      entry.long_name = names.substr(comma + 2);
    } else if (names.compare(0, 2, "--") == 0) {
      entry.long_name = names;
    } else {
      entry.short_name = names;
    }
    entry.value_name = std::move(value_name);
    entry.help = std::move(help);
    entry.on = std::move(on);
    entries_.push_back(std::move(entry));
  }

  const Entry& find_long(const std::string& name) const {
    if (name == "--help") help_and_exit();
    if (name == "--version") version_and_exit();
    for (const Entry& entry : entries_) {
      if (!entry.long_name.empty() && entry.long_name == name) return entry;
    }
    throw UsageError("unknown option '" + name + "'" + suggestion(name));
  }

  const Entry& find_short(char letter) const {
    if (letter == 'h') help_and_exit();
    const std::string name = std::string("-") + letter;
    for (const Entry& entry : entries_) {
      if (entry.short_name == name) return entry;
    }
    throw UsageError("unknown option '" + name + "'");
  }

  // " (did you mean --window?)" for a long option a typo or two away from one declared.
  std::string suggestion(const std::string& name) const {
    std::string best;
    std::size_t best_distance = 3;
    auto consider = [&](const std::string& candidate) {
      std::size_t distance = edit_distance(name, candidate);
      if (!candidate.empty() && distance < best_distance) {
        best_distance = distance;
        best = candidate;
      }
    };
    for (const Entry& entry : entries_) consider(entry.long_name);
    consider("--help");
    consider("--version");
    return best.empty() ? "" : " (did you mean " + best + "?)";
  }

  static std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
      std::size_t diagonal = row[0];
      row[0] = i;
      for (std::size_t j = 1; j <= b.size(); ++j) {
        std::size_t above = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
        diagonal = above;
      }
    }
    return row[b.size()];
  }

  [[noreturn]] void help_and_exit() const {
    print_help(std::cout);
    std::cout.flush();
    std::exit(kExitOk);
  }
  [[noreturn]] void version_and_exit() const {
    std::cout << program_ << ' ' << kVersion << '\n';
    std::cout.flush();
    std::exit(kExitOk);
  }

  std::string program_;
  std::string usage_;
  std::string epilogue_;
  std::vector<Entry> entries_;
};

}  // namespace sonic::tools
