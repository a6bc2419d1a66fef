#include "guided/grammar_bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "guided/matcher.h"
#include "util/error.h"

namespace ringlm::guided {
namespace fs = std::filesystem;

void BenchStats::merge(const BenchStats& o) {
  files += o.files;
  compiled += o.compiled;
  passed += o.passed;
  valid_total += o.valid_total;
  valid_accepted += o.valid_accepted;
  invalid_total += o.invalid_total;
  invalid_rejected += o.invalid_rejected;
  mask_mismatches += o.mask_mismatches;
  mask_us.insert(mask_us.end(), o.mask_us.begin(), o.mask_us.end());
  compile_ms.insert(compile_ms.end(), o.compile_ms.begin(), o.compile_ms.end());
}

std::string bench_dataset_name(const std::string& path) {
  std::string stem = fs::path(path).stem().string();
  auto sep = stem.find("---");
  if (sep != std::string::npos) return stem.substr(0, sep);
  size_t end = stem.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(stem[end - 1]))) --end;
  if (end > 0 && end < stem.size() && stem[end - 1] == '_') return stem.substr(0, end - 1);
  return stem;
}

std::vector<std::string> bench_collect_files(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (auto& p : paths) {
    if (fs::is_directory(p)) {
      std::vector<std::string> found;
      for (auto& e : fs::directory_iterator(p)) {
        if (e.is_regular_file() && e.path().extension() == ".json") found.push_back(e.path().string());
      }
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(p)) {
      out.push_back(p);
    } else {
      fail("bench input '", p, "' is neither a file nor a directory");
    }
  }
  return out;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  size_t k = size_t(std::ceil(p / 100.0 * double(v.size())));
  k = std::clamp<size_t>(k, 1, v.size()) - 1;
  std::nth_element(v.begin(), v.begin() + long(k), v.end());
  return v[k];
}

namespace {

using Clock = std::chrono::steady_clock;

double elapsed_us(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// Short, stable category of a compile error for the summary ("unsupported keyword 'x'").
std::string error_category(const std::string& msg) {
  auto q = msg.find("unsupported keyword '");
  if (q != std::string::npos) {
    auto end = msg.find('\'', q + 21);
    return msg.substr(q, end == std::string::npos ? std::string::npos : end - q + 1);
  }
  return msg.substr(0, std::min<size_t>({msg.size(), 60, msg.find(" (at /")}));
}

// Key-order search for test data. The grammar fixes one key order per object (schema order,
// which may differ between anyOf branches), while validity does not depend on key order. For a
// value and a start configuration, ends() finds the distinct configurations the value can end in
// over key orders (one text each). An object first tries candidate orders: the instance's own,
// then one per declared property list of the schema that names some of its keys (those keys in
// list order, the rest after), most covering first; only if none fits, a breadth-first search
// over (keys placed, configuration) states, deduplicated and capped at kBeam. Arrays carry every
// distinct end configuration of each element to the next. Carrying all end configurations (not
// just the first that parses) matters: under anyOf an order may fit only a branch that fails
// later (e.g. a branch whose additional properties take any value accepts every order).
class OrderSearch {
 public:
  using Ends = std::vector<std::pair<int32_t, std::string>>;
  static constexpr size_t kBeam = 32;

  static constexpr size_t kMaxCandidates = 24;

  OrderSearch(GrammarIndex& g, Whitespace ws, int64_t budget, const std::vector<std::vector<std::string>>& orders)
      : g_(g), comma_(ws == Whitespace::kPython ? ", " : ","), colon_(ws == Whitespace::kPython ? ": " : ":"),
        ws_(ws), budget_(budget), orders_(orders) {}

  const Ends& ends(const Json& v, int32_t cfg) {
    auto key = std::make_pair(&v, cfg);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    Ends out = compute(v, cfg);
    return memo_.emplace(key, std::move(out)).first->second;
  }

  bool exhausted() const { return budget_ < 0; }
  // The longest text accepted before a rejection, with the rejected bytes in <>, for reports.
  const std::string& longest() const { return longest_; }

 private:
  int32_t emit(int32_t cfg, const std::string& text_so_far, const std::string& bytes) {
    --budget_;
    int32_t next = g_.step_bytes(cfg, bytes);
    if (next == GrammarIndex::kDead && text_so_far.size() >= longest_.size()) {
      longest_ = text_so_far + "<" + bytes.substr(0, 20) + ">";
    }
    return next;
  }

  // Key orders to try first for object v (indices into its keys).
  const std::vector<std::vector<size_t>>& candidates(const Json& v, const std::vector<std::string>& keys) {
    auto it = candidates_.find(&v);
    if (it != candidates_.end()) return it->second;
    std::vector<std::vector<size_t>> out;
    std::vector<size_t> identity(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) identity[i] = i;
    out.push_back(identity);
    std::vector<std::pair<size_t, const std::vector<std::string>*>> lists;  // (coverage, list)
    std::set<std::string> key_set(keys.begin(), keys.end());
    for (const auto& l : orders_) {
      size_t hits = 0;
      for (const auto& n : l) hits += key_set.count(n);
      if (hits > 0) lists.emplace_back(hits, &l);
    }
    std::stable_sort(lists.begin(), lists.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [hits, l] : lists) {
      if (out.size() >= kMaxCandidates) break;
      std::vector<size_t> order;
      std::vector<char> used(keys.size(), 0);
      for (const auto& n : *l) {
        for (size_t i = 0; i < keys.size(); ++i) {
          if (!used[i] && keys[i] == n) {
            used[i] = 1;
            order.push_back(i);
          }
        }
      }
      for (size_t i = 0; i < keys.size(); ++i)
        if (!used[i]) order.push_back(i);
      if (std::find(out.begin(), out.end(), order) == out.end()) out.push_back(std::move(order));
    }
    return candidates_.emplace(&v, std::move(out)).first->second;
  }

  // Frontier of (configuration, text) after appending `key: value` for each entry.
  Ends place_key(const Ends& frontier, const Json& v, const std::string& key, bool first) {
    Ends next;
    std::string kb = (first ? "" : comma_) + serialize_json(Json(key), ws_) + colon_;
    for (const auto& [c, text] : frontier) {
      int32_t c1 = emit(c, text, kb);
      if (c1 == GrammarIndex::kDead) continue;
      for (const auto& [end, et] : ends(v[key], c1))
        if (next.size() < kBeam) add(next, end, text + kb + et);
    }
    return next;
  }

  Ends compute(const Json& v, int32_t cfg) {
    Ends out;
    if (budget_ < 0) return out;
    if (v.is_object()) {
      int32_t open = emit(cfg, "", "{");
      if (open == GrammarIndex::kDead) return out;
      std::vector<std::string> keys;
      for (auto it = v.begin(); it != v.end(); ++it) keys.push_back(it.key());
      for (const auto& order : candidates(v, keys)) {
        Ends frontier{{open, "{"}};
        for (size_t n = 0; n < order.size() && !frontier.empty(); ++n)
          frontier = place_key(frontier, v, keys[order[n]], n == 0);
        for (const auto& [c, text] : frontier) {
          int32_t e = emit(c, text, "}");
          if (e != GrammarIndex::kDead) add(out, e, text + "}");
        }
        if (budget_ < 0) return out;
      }
      if (!out.empty()) return out;
      struct Entry {
        std::vector<char> placed;
        int32_t cfg;
        std::string text;
      };
      std::vector<Entry> frontier{{std::vector<char>(keys.size(), 0), open, "{"}};
      for (size_t step = 0; step < keys.size() && !frontier.empty(); ++step) {
        std::vector<Entry> next;
        std::set<std::pair<std::vector<char>, int32_t>> seen;
        for (const Entry& e : frontier) {
          for (size_t k = 0; k < keys.size() && next.size() < kBeam; ++k) {
            if (e.placed[k]) continue;
            std::string kb = (step ? comma_ : "") + serialize_json(Json(keys[k]), ws_) + colon_;
            int32_t c1 = emit(e.cfg, e.text, kb);
            if (c1 == GrammarIndex::kDead) continue;
            for (const auto& [end, text] : ends(v[keys[k]], c1)) {
              std::vector<char> placed = e.placed;
              placed[k] = 1;
              if (!seen.emplace(placed, end).second) continue;
              next.push_back({std::move(placed), end, e.text + kb + text});
              if (next.size() >= kBeam) break;
            }
          }
          if (budget_ < 0) break;
        }
        frontier = std::move(next);
      }
      for (const Entry& e : frontier) {
        int32_t c = emit(e.cfg, e.text, "}");
        if (c != GrammarIndex::kDead) add(out, c, e.text + "}");
      }
      return out;
    }
    if (v.is_array()) {
      int32_t open = emit(cfg, "", "[");
      if (open == GrammarIndex::kDead) return out;
      Ends frontier{{open, "["}};
      for (size_t i = 0; i < v.size() && !frontier.empty(); ++i) {
        Ends next;
        for (const auto& [c, text] : frontier) {
          int32_t c1 = i ? emit(c, text, comma_) : c;
          if (c1 == GrammarIndex::kDead) continue;
          for (const auto& [end, et] : ends(v[i], c1)) {
            if (next.size() < kBeam) add(next, end, text + (i ? comma_ : "") + et);
          }
        }
        frontier = std::move(next);
      }
      for (const auto& [c, text] : frontier) {
        int32_t e = emit(c, text, "]");
        if (e != GrammarIndex::kDead) add(out, e, text + "]");
      }
      return out;
    }
    std::string text = serialize_json(v, ws_);
    int32_t c = emit(cfg, "", text);
    if (c != GrammarIndex::kDead) out.emplace_back(c, std::move(text));
    return out;
  }

  static void add(Ends& out, int32_t cfg, std::string text) {
    for (auto& e : out)
      if (e.first == cfg) return;
    out.emplace_back(cfg, std::move(text));
  }

  GrammarIndex& g_;
  const std::string comma_, colon_;
  Whitespace ws_;
  int64_t budget_;
  const std::vector<std::vector<std::string>>& orders_;
  std::string longest_;
  std::map<std::pair<const Json*, int32_t>, Ends> memo_;
  std::map<const Json*, std::vector<std::vector<size_t>>> candidates_;
};

struct FileResult {
  std::string dataset;
  BenchStats stats;
  std::string compile_error;
  std::vector<BenchFailure> failures;
};

FileResult run_file(const std::string& path, const std::shared_ptr<const Vocabulary>& vocab, const EncodeFn& encode,
                    const BenchOptions& opt) {
  FileResult r;
  r.dataset = bench_dataset_name(path);
  r.stats.files = 1;
  Json doc;
  {
    std::ifstream in(path);
    if (!in) fail("cannot open ", path);
    try {
      doc = Json::parse(in);
    } catch (const std::exception& e) {
      fail(path, ": invalid JSON: ", e.what());
    }
  }
  if (!doc.contains("schema") || !doc.contains("tests")) fail(path, ": missing 'schema' or 'tests'");
  const Json& tests = doc["tests"];
  for (auto& t : tests) (t.value("valid", false) ? r.stats.valid_total : r.stats.invalid_total)++;

  std::shared_ptr<GrammarIndex> index;
  std::vector<std::vector<std::string>> order;
  auto t0 = Clock::now();
  try {
    CompileOptions copt;
    copt.whitespace = opt.whitespace;
    copt.mode = opt.mode;
    CompiledSchema cs = compile_schema(doc["schema"], copt);
    order = std::move(cs.property_orders);
    index = std::make_shared<GrammarIndex>(std::move(cs.grammar), vocab);
  } catch (const std::exception& e) {
    r.compile_error = e.what();
    return r;
  }
  auto t1 = Clock::now();
  r.stats.compiled = 1;
  r.stats.compile_ms.push_back(elapsed_us(t0, t1) / 1000.0);

  bool all_ok = true;
  std::vector<uint32_t> mask(vocab->mask_words());
  uint32_t stop = vocab->stop_ids().empty() ? UINT32_MAX : vocab->stop_ids()[0];
  for (auto& t : tests) {
    bool valid = t.value("valid", false);
    // Key order: one the grammar accepts if there is one (the grammar fixes the order; the
    // instance's own order is irrelevant to validity), else the declared-order heuristic.
    Json data = reorder_keys(t["data"], order);
    std::string text;
    OrderSearch search(*index, opt.whitespace, 200000, order);
    bool guided = false;
    for (const auto& [end, t] : search.ends(data, index->initial())) {
      if (index->accepting(end)) {
        text = t;
        guided = true;
        break;
      }
    }
    if (!guided) text = serialize_json(data, opt.whitespace);
    const std::string& longest = search.longest();
    std::vector<uint32_t> toks = encode(text);
    if (stop != UINT32_MAX) toks.push_back(stop);
    Matcher m(index);
    bool accepted = true;
    std::string reason;
    size_t consumed_bytes = 0;
    for (size_t i = 0; i < toks.size(); ++i) {
      uint32_t tok = toks[i];
      bool masked = opt.mask_every <= 1 || i % size_t(opt.mask_every) == 0;
      bool in_mask = false;
      if (masked) {
        auto a = Clock::now();
        m.fill_mask(mask.data());
        auto b = Clock::now();
        r.stats.mask_us.push_back(elapsed_us(a, b));
        in_mask = (mask[tok >> 5] >> (tok & 31)) & 1;
      }
      bool ok = m.accept(tok);
      if (masked && ok != in_mask) {
        r.stats.mask_mismatches++;
        reason = "mask/accept disagree at token " + std::to_string(i);
        r.failures.push_back({path, t.value("description", ""), reason + " in " + text.substr(0, 300), valid});
      }
      if (!ok) {
        accepted = false;
        if (reason.empty()) {
          std::string ctx = text.substr(0, std::min(text.size(), consumed_bytes));
          if (ctx.size() > 60) ctx = "..." + ctx.substr(ctx.size() - 60);
          reason = "rejected token " + std::to_string(i) + " '" + (tok == stop ? "<stop>" : vocab->bytes(tok)) +
                   "' after '" + ctx + "'";
          if (!guided) {
            std::string l = longest.size() > 100 ? "..." + longest.substr(longest.size() - 100) : longest;
            reason += "; no key order accepted, longest: " + l;
          }
        }
        break;
      }
      if (tok != stop) consumed_bytes += vocab->bytes(tok).size();
    }
    if (valid) {
      if (accepted) {
        r.stats.valid_accepted++;
      } else {
        all_ok = false;
        r.failures.push_back({path, t.value("description", ""), reason, true});
      }
    } else {
      if (!accepted) {
        r.stats.invalid_rejected++;
      } else {
        all_ok = false;
        r.failures.push_back({path, t.value("description", ""), "accepted " + text.substr(0, 200), false});
      }
    }
  }
  r.stats.passed = all_ok ? 1 : 0;
  return r;
}

}  // namespace

BenchReport run_grammar_bench(const std::vector<std::string>& files, std::shared_ptr<const Vocabulary> vocab,
                              const EncodeFn& encode, const BenchOptions& options) {
  std::vector<FileResult> results(files.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    while (true) {
      size_t i = next.fetch_add(1);
      if (i >= files.size()) break;
      results[i] = run_file(files[i], vocab, encode, options);
    }
  };
  int threads = std::max(1, options.threads);
  if (threads == 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }
  BenchReport rep;
  for (size_t i = 0; i < results.size(); ++i) {
    const FileResult& r = results[i];
    rep.overall.merge(r.stats);
    rep.per_dataset[r.dataset].merge(r.stats);
    if (!r.compile_error.empty()) {
      rep.compile_errors[error_category(r.compile_error)]++;
      rep.refusals.emplace_back(files[i], r.compile_error);
    }
    rep.failures.insert(rep.failures.end(), r.failures.begin(), r.failures.end());
  }
  return rep;
}

namespace {

std::string pct(int64_t a, int64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", b ? 100.0 * double(a) / double(b) : 0.0);
  return buf;
}

std::string row(const std::string& name, const BenchStats& s) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "| %-22s | %6lld | %8s | %8s | %8s | %8s | %9.1f | %9.1f | %10.3f | %10.3f |\n",
                name.c_str(), (long long)s.files, pct(s.compiled, s.files).c_str(), pct(s.passed, s.files).c_str(),
                pct(s.valid_accepted, s.valid_total).c_str(), pct(s.invalid_rejected, s.invalid_total).c_str(),
                percentile(s.mask_us, 50), percentile(s.mask_us, 99), percentile(s.compile_ms, 50),
                percentile(s.compile_ms, 99));
  return buf;
}

Json stats_json(const BenchStats& s) {
  return Json{{"files", s.files},
              {"compiled", s.compiled},
              {"passed", s.passed},
              {"valid_total", s.valid_total},
              {"valid_accepted", s.valid_accepted},
              {"invalid_total", s.invalid_total},
              {"invalid_rejected", s.invalid_rejected},
              {"mask_mismatches", s.mask_mismatches},
              {"masks", s.mask_us.size()},
              {"mask_us_p50", percentile(s.mask_us, 50)},
              {"mask_us_p99", percentile(s.mask_us, 99)},
              {"compile_ms_p50", percentile(s.compile_ms, 50)},
              {"compile_ms_p99", percentile(s.compile_ms, 99)}};
}

}  // namespace

std::string format_bench_table(const BenchReport& r) {
  std::ostringstream os;
  os << "| dataset                |  files | compiled |   passed | valid ok | invalid rejected | mask p50 us | mask p99 us | compile p50 ms | compile p99 ms |\n";
  os << "|------------------------|-------:|---------:|---------:|---------:|---------:|----------:|----------:|-----------:|-----------:|\n";
  for (auto& [name, s] : r.per_dataset) os << row(name, s);
  os << row("overall", r.overall);
  return os.str();
}

Json bench_report_json(const BenchReport& r) {
  Json out = stats_json(r.overall);
  Json per = Json::object();
  for (auto& [name, s] : r.per_dataset) per[name] = stats_json(s);
  out["per_dataset"] = per;
  Json errs = Json::object();
  for (auto& [k, n] : r.compile_errors) errs[k] = n;
  out["compile_errors"] = errs;
  Json fails = Json::array();
  for (auto& f : r.failures) {
    fails.push_back(Json{{"file", f.file}, {"test", f.description}, {"valid", f.valid}, {"reason", f.reason}});
  }
  out["failures"] = fails;
  // Every refused file with its whole message (keyword and pointer), for grouping refusals.
  Json refused = Json::array();
  for (auto& [file, why] : r.refusals) refused.push_back(Json{{"file", file}, {"error", why}});
  out["refused"] = refused;
  return out;
}

}  // namespace ringlm::guided
