#include "analysis/record.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "io/safetensors_writer.h"
#include "util/error.h"

namespace attngeom {

std::size_t RecordSchema::per_n_index(const std::string& field) const {
  const auto it = std::find(per_n_fields.begin(), per_n_fields.end(), field);
  ATTNGEOM_CHECK(it != per_n_fields.end());
  return static_cast<std::size_t>(it - per_n_fields.begin());
}

std::size_t RecordSchema::per_row_index(const std::string& field) const {
  const auto it = std::find(per_row_fields.begin(), per_row_fields.end(), field);
  ATTNGEOM_CHECK(it != per_row_fields.end());
  return static_cast<std::size_t>(it - per_row_fields.begin());
}

void SequenceRecord::resize(const RecordSchema& schema, int l, int h, std::size_t seq_len, std::size_t rows) {
  layers = l;
  heads = h;
  const auto lh = static_cast<std::size_t>(l) * static_cast<std::size_t>(h);
  per_n.assign(lh * rows * schema.n_grid.size() * schema.per_n_fields.size(), 0.0);
  per_row.assign(lh * rows * schema.per_row_fields.size(), 0.0);
  profile.assign(lh * seq_len, 0.0);
}

void SequenceRecord::resize_routing(int experts_per_layer) {
  experts = experts_per_layer;
  expert_load.assign(static_cast<std::size_t>(layers) * static_cast<std::size_t>(experts), 0);
  routing_flips.assign(experts > 0 ? static_cast<std::size_t>(layers) : 0, -1);
}

std::filesystem::path record_path(const std::filesystem::path& records_dir, std::size_t sequence) {
  char name[64];
  std::snprintf(name, sizeof name, "seq-%06zu.safetensors", sequence);
  return records_dir / name;
}

std::vector<std::filesystem::path> list_records(const std::filesystem::path& records_dir) {
  std::vector<std::filesystem::path> records;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(records_dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::size_t sequence = 0;
    char tail = 0;
    if (name.size() == 22 && std::sscanf(name.c_str(), "seq-%6zu.safetensor%c", &sequence, &tail) == 2 && tail == 's') {
      records.push_back(entry.path());
    }
  }
  if (ec) throw InputError(records_dir.string() + ": cannot list records: " + ec.message());
  std::sort(records.begin(), records.end());
  return records;
}

void write_record(const std::filesystem::path& path, const RecordSchema& schema, const SequenceRecord& r) {
  const std::int64_t L = r.layers, H = r.heads;
  const auto Q = static_cast<std::int64_t>(r.rows()), T = static_cast<std::int64_t>(r.seq_len());
  const auto G = static_cast<std::int64_t>(schema.n_grid.size());
  const nlohmann::json meta = {{"sequence", r.sequence},
                               {"n_grid", schema.n_grid},
                               {"per_n_fields", schema.per_n_fields},
                               {"per_row_fields", schema.per_row_fields}};
  // F64 first: the data region starts 8-aligned, so they stay aligned.
  std::vector<TensorSpec> tensors = {
      {"per_n", DType::kF64, {L, H, Q, G, static_cast<std::int64_t>(schema.per_n_fields.size())}},
      {"per_row", DType::kF64, {L, H, Q, static_cast<std::int64_t>(schema.per_row_fields.size())}},
      {"profile", DType::kF64, {L, H, T}},
      {"tokens", DType::kI32, {T}},
      {"query_positions", DType::kI32, {Q}}};
  if (r.experts > 0) {
    tensors.push_back({"expert_load", DType::kI32, {L, r.experts}});
    tensors.push_back({"routing_flips", DType::kI32, {L}});
  }
  SafetensorsWriter writer(path, tensors, {{"format", "attngeom-record-v1"}, {"record", meta.dump()}});
  if (r.experts > 0) {
    writer.write("expert_load", 0, r.expert_load.data(), r.expert_load.size() * sizeof(std::int32_t));
    writer.write("routing_flips", 0, r.routing_flips.data(), r.routing_flips.size() * sizeof(std::int32_t));
  }
  writer.write("tokens", 0, r.tokens.data(), r.tokens.size() * sizeof(std::int32_t));
  writer.write("query_positions", 0, r.query_positions.data(), r.query_positions.size() * sizeof(std::int32_t));
  writer.write("per_n", 0, r.per_n.data(), r.per_n.size() * sizeof(double));
  writer.write("per_row", 0, r.per_row.data(), r.per_row.size() * sizeof(double));
  writer.write("profile", 0, r.profile.data(), r.profile.size() * sizeof(double));
  writer.commit();
}

RecordReader::RecordReader(const std::filesystem::path& path)
    : file_(path), header_(parse_safetensors(file_.bytes(), path.string())) {
  const auto bad = [&](const std::string& what) {
    return InputError(path.string() + ": not an attngeom record: " + what);
  };
  const auto it = header_.metadata.find("record");
  if (header_.metadata.count("format") == 0 || header_.metadata.at("format") != "attngeom-record-v1" ||
      it == header_.metadata.end()) {
    throw bad("missing format/record metadata");
  }
  try {
    const auto meta = nlohmann::json::parse(it->second);
    sequence_ = meta.at("sequence").get<std::size_t>();
    schema_.n_grid = meta.at("n_grid").get<std::vector<std::size_t>>();
    schema_.per_n_fields = meta.at("per_n_fields").get<std::vector<std::string>>();
    schema_.per_row_fields = meta.at("per_row_fields").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("bad record metadata (") + e.what() + ")");
  }
  const auto* per_n = header_.find("per_n");
  const auto* per_row = header_.find("per_row");
  const auto* profile = header_.find("profile");
  const auto* queries = header_.find("query_positions");
  const auto* tokens = header_.find("tokens");
  if (!per_n || !per_row || !profile || !queries || !tokens || per_n->shape.size() != 5 || per_row->shape.size() != 4 ||
      profile->shape.size() != 3 || per_n->dtype != DType::kF64 || per_row->dtype != DType::kF64 ||
      profile->dtype != DType::kF64 || queries->dtype != DType::kI32 || tokens->dtype != DType::kI32) {
    throw bad("tensors missing or of the wrong dtype/rank");
  }
  layers_ = static_cast<int>(per_n->shape[0]);
  heads_ = static_cast<int>(per_n->shape[1]);
  rows_ = static_cast<std::size_t>(per_n->shape[2]);
  seq_len_ = static_cast<std::size_t>(profile->shape[2]);
  const std::vector<std::int64_t> want_n = {layers_, heads_, static_cast<std::int64_t>(rows_),
                                            static_cast<std::int64_t>(schema_.n_grid.size()),
                                            static_cast<std::int64_t>(schema_.per_n_fields.size())};
  const std::vector<std::int64_t> want_row = {layers_, heads_, static_cast<std::int64_t>(rows_),
                                              static_cast<std::int64_t>(schema_.per_row_fields.size())};
  if (per_n->shape != want_n || per_row->shape != want_row || profile->shape[0] != layers_ ||
      profile->shape[1] != heads_ || queries->shape != std::vector<std::int64_t>{static_cast<std::int64_t>(rows_)}) {
    throw bad("tensor shapes disagree with each other or with the schema");
  }
  for (const auto* e : {per_n, per_row, profile}) {
    if (reinterpret_cast<std::uintptr_t>(e->data.data()) % alignof(double) != 0)
      throw bad("F64 data not 8-byte aligned");
  }
  const auto* load = header_.find("expert_load");
  const auto* flips = header_.find("routing_flips");
  if ((load == nullptr) != (flips == nullptr)) throw bad("expert_load and routing_flips come together");
  if (load == nullptr) return;
  if (load->dtype != DType::kI32 || flips->dtype != DType::kI32 || load->shape.size() != 2 ||
      load->shape[0] != layers_ || load->shape[1] < 1 || flips->shape != std::vector<std::int64_t>{layers_}) {
    throw bad("expert_load or routing_flips of the wrong dtype or shape");
  }
  experts_ = static_cast<int>(load->shape[1]);
}

std::span<const std::int32_t> RecordReader::expert_load(int layer) const {
  const auto* e = header_.find("expert_load");
  ATTNGEOM_CHECK(e != nullptr && layer >= 0 && layer < layers_);
  const auto* all = reinterpret_cast<const std::int32_t*>(e->data.data());
  return {all + static_cast<std::size_t>(layer) * static_cast<std::size_t>(experts_),
          static_cast<std::size_t>(experts_)};
}

std::int32_t RecordReader::routing_flips(int layer) const {
  const auto* e = header_.find("routing_flips");
  ATTNGEOM_CHECK(e != nullptr && layer >= 0 && layer < layers_);
  return reinterpret_cast<const std::int32_t*>(e->data.data())[layer];
}

std::span<const double> RecordReader::f64(const char* name) const {
  const auto* e = header_.find(name);  // present and aligned: checked on open
  return {reinterpret_cast<const double*>(e->data.data()), e->data.size() / sizeof(double)};
}

std::span<const std::int32_t> RecordReader::query_positions() const {
  const auto* e = header_.find("query_positions");
  return {reinterpret_cast<const std::int32_t*>(e->data.data()), rows_};
}

std::span<const double> RecordReader::per_n(int layer, int head) const {
  const std::size_t block = rows_ * schema_.n_grid.size() * schema_.per_n_fields.size();
  return f64("per_n").subspan((static_cast<std::size_t>(layer) * heads_ + head) * block, block);
}

std::span<const double> RecordReader::per_row(int layer, int head) const {
  const std::size_t block = rows_ * schema_.per_row_fields.size();
  return f64("per_row").subspan((static_cast<std::size_t>(layer) * heads_ + head) * block, block);
}

std::span<const double> RecordReader::profile(int layer, int head) const {
  return f64("profile").subspan((static_cast<std::size_t>(layer) * heads_ + head) * seq_len_, seq_len_);
}

}  // namespace attngeom
