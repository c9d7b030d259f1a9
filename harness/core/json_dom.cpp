#include "harness/core/json_dom.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/core/text_table.hpp"

namespace memstress {
namespace {

using Json = nlohmann::json;

// The keys one open object has had so far: a short list while short, a hash set once long, so that an object
// of a million keys costs a million lookups, not a million squared.
class SeenKeys {
 public:
  bool insert(const std::string& key) {
    constexpr std::size_t kFew = 16;
    if (many_.empty()) {
      if (std::find(few_.begin(), few_.end(), key) != few_.end()) {
        return false;
      }
      few_.push_back(key);
      if (few_.size() > kFew) {
        many_.insert(few_.begin(), few_.end());
        few_.clear();
      }
      return true;
    }
    return many_.insert(key).second;
  }

 private:
  std::vector<std::string> few_;
  std::unordered_set<std::string> many_;
};

class Builder final : public nlohmann::json_sax<Json> {
 public:
  Builder(Json& root, bool allow_exceptions, const StreamedArray* streamed)
      : root_(&root), allow_exceptions_(allow_exceptions), streamed_(streamed) {}

  bool null() override { return put(nullptr); }
  bool boolean(bool v) override { return put(v); }
  bool number_integer(number_integer_t v) override { return put(v); }
  bool number_unsigned(number_unsigned_t v) override { return put(v); }
  bool number_float(number_float_t v, const string_t& /*text*/) override { return put(v); }
  bool string(string_t& v) override { return put(std::move(v)); }
  bool binary(binary_t& v) override { return put(Json::binary(std::move(v))); }

  bool start_object(std::size_t /*elements*/) override { return open(Json::value_t::object); }
  bool key(string_t& k) override {
    Open& o = open_.back();
    if (!o.keys.insert(k)) {
      throw InputError(fmt::format("key \"{}\" twice in one object (at {}): which one is meant is unknown",
                                   printable(k, 60), printable(where(), 120)));
    }
    o.key = k;
    slot_ = &(*o.value)[k];
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t /*elements*/) override {
    const bool ok = open(Json::value_t::array);
    // The streamed array: the top-level object's member of that name.
    open_.back().streamed =
        streamed_ != nullptr && open_.size() == 2 && !open_[0].array && open_[0].key == streamed_->key;
    return ok;
  }
  bool end_array() override { return close(); }

  bool parse_error(std::size_t /*position*/, const std::string& /*token*/,
                   const nlohmann::detail::exception& e) override {
    if (allow_exceptions_) {
      throw e;
    }
    return false;
  }

 private:
  struct Open {
    Json* value = nullptr;
    bool array = false;
    bool streamed = false;  // elements are handed to StreamedArray::take, not kept
    std::size_t index = 0;  // arrays: elements so far
    std::string key;        // objects: the last key
    SeenKeys keys;
  };

  // Places a value where the parse is: the root, the next element of the open array, or the member of the
  // open object named by the last key. Returns where it went.
  template <typename V>
  Json* place(V&& v) {
    if (open_.empty()) {
      *root_ = Json(std::forward<V>(v));
      return root_;
    }
    Open& o = open_.back();
    if (o.array) {
      ++o.index;
      o.value->get_ref<Json::array_t&>().emplace_back(std::forward<V>(v));
      return &o.value->back();
    }
    *slot_ = Json(std::forward<V>(v));
    return slot_;
  }

  template <typename V>
  bool put(V&& v) {
    place(std::forward<V>(v));
    hand_over();
    return true;
  }

  bool open(Json::value_t type) {
    Json* value = place(type);
    Open& o = open_.emplace_back();
    o.value = value;
    o.array = type == Json::value_t::array;
    return true;
  }

  bool close() {
    open_.pop_back();
    hand_over();
    return true;
  }

  // A whole element of the streamed array goes to its taker, out of the array.
  void hand_over() {
    if (open_.empty() || !open_.back().streamed) {
      return;
    }
    Open& o = open_.back();
    Json::array_t& elements = o.value->get_ref<Json::array_t&>();
    Json element = std::move(elements.back());
    elements.pop_back();
    streamed_->take(std::move(element), o.index - 1);
  }

  // The JSON pointer of the object being read ("/" at the top level).
  std::string where() const {
    std::string pointer;
    for (std::size_t i = 0; i + 1 < open_.size(); ++i) {
      const Open& o = open_[i];
      pointer += "/" + (o.array ? std::to_string(o.index - 1) : o.key);
    }
    return pointer.empty() ? "/" : pointer;
  }

  Json* root_;
  bool allow_exceptions_;
  const StreamedArray* streamed_;
  std::vector<Open> open_;
  Json* slot_ = nullptr;  // the member the last key named
};

}  // namespace

Json build_json(std::string_view text, bool allow_exceptions, const StreamedArray* streamed) {
  Json result;
  Builder builder(result, allow_exceptions, streamed);
  if (!Json::sax_parse(text, &builder, Json::input_format_t::json, /*strict=*/true)) {
    return Json(Json::value_t::discarded);
  }
  return result;
}

}  // namespace memstress
