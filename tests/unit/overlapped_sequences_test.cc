// OverlappedSequences: behind a queue (as on a GPU) each sequence's record equals the direct
// analysis of that sequence, bit for bit, handed over in order and one sequence late (the next
// forward pass runs beside its analysis); observed directly, at once. Where a forward pass or
// an analysis fails, the sequence before it still comes out (an earlier failure is reported
// first), and GPU parts come from one pool whichever turn analyses.
#include "analysis/overlapped_sequences.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "analysis/row_fields.h"
#include "fed_forward.h"
#include "screened_deviations.h"
#include "util/error.h"

namespace attngeom {
namespace {

using fed::kSeq;

const std::vector<int> kTokens(kSeq, 1);
const std::vector<int> kRows = {2, 17, 39};
const ModelConfig kConfig = fed::config();  // outlives the analyzers, which keep a reference

SequenceRecord direct_record(std::uint64_t seed, const RecordSchema& schema) {
  SequenceAnalyzer direct(kConfig, schema, geometry::RowAnalysisOptions{});
  direct.begin(0, kTokens, kRows);
  fed::feed(direct, kRows, seed);
  return direct.record();
}

// What a run hands over: each sequence's number and record, in the order handed.
struct Delivered {
  std::vector<std::size_t> sequences;
  std::vector<SequenceRecord> records;
  OverlappedSequences::Done done() {
    return [this](const SequenceAnalyzer& analyzed) {
      sequences.push_back(analyzed.record().sequence);
      records.push_back(analyzed.record());
    };
  }
};

void expect_record_of_seed(const SequenceRecord& record, std::uint64_t seed, const RecordSchema& schema) {
  const SequenceRecord expected = direct_record(seed, schema);
  EXPECT_TRUE(fed::same_bits(record.per_n, expected.per_n)) << "seed " << seed;
  EXPECT_TRUE(fed::same_bits(record.per_row, expected.per_row)) << "seed " << seed;
  EXPECT_EQ(record.profile, expected.profile) << "seed " << seed;
}

std::uint64_t seed_of(std::size_t sequence) { return 100 + sequence; }

TEST(OverlappedSequences, BehindAQueueEachRecordComesOutOneSequenceLateInOrder) {
  const RecordSchema schema = make_record_schema(kSeq, false);
  for (const int workers : {1, 3}) {
    OverlappedSequences::Setup setup;
    setup.queued = true;
    setup.layer_workers = workers;
    OverlappedSequences sequences(kConfig, schema, geometry::RowAnalysisOptions{}, setup);
    EXPECT_EQ(sequences.layer_workers(), workers);
    Delivered delivered;
    for (std::size_t i = 0; i < 5; ++i) {
      sequences.analyze(
          i, kTokens, kRows, [&](ForwardObserver& observer) { fed::feed(observer, kRows, seed_of(i)); },
          delivered.done());
      EXPECT_EQ(delivered.sequences.size(), i) << "after sequence " << i;
    }
    sequences.finish(delivered.done());
    sequences.finish(delivered.done());  // nothing left in flight
    ASSERT_EQ(delivered.sequences, (std::vector<std::size_t>{0, 1, 2, 3, 4})) << workers;
    for (std::size_t i = 0; i < 5; ++i) expect_record_of_seed(delivered.records[i], seed_of(i), schema);
  }
}

TEST(OverlappedSequences, ObservedDirectlyEachRecordComesOutAtOnce) {
  const RecordSchema schema = make_record_schema(kSeq, false);
  OverlappedSequences sequences(kConfig, schema, geometry::RowAnalysisOptions{}, {});
  EXPECT_EQ(sequences.layer_workers(), 0);
  Delivered delivered;
  for (std::size_t i = 0; i < 2; ++i) {
    sequences.analyze(
        i, kTokens, kRows, [&](ForwardObserver& observer) { fed::feed(observer, kRows, seed_of(i)); },
        delivered.done());
    ASSERT_EQ(delivered.sequences.size(), i + 1);
    expect_record_of_seed(delivered.records[i], seed_of(i), schema);
  }
}

// Sequence 7 analysed behind a queue, then sequence 8 through `failing`: 7 is handed over,
// bit for bit, and 8 is not. Returns the text of the Error that reached the caller.
template <class Error>
std::string fail_after_one_sequence(const std::function<void(ForwardObserver&)>& failing) {
  const RecordSchema schema = make_record_schema(kSeq, false);
  OverlappedSequences::Setup setup;
  setup.queued = true;
  OverlappedSequences sequences(kConfig, schema, geometry::RowAnalysisOptions{}, setup);
  Delivered delivered;
  sequences.analyze(
      7, kTokens, kRows, [&](ForwardObserver& observer) { fed::feed(observer, kRows, seed_of(7)); }, delivered.done());
  std::string error;
  try {
    sequences.analyze(8, kTokens, kRows, failing, delivered.done());
    sequences.finish(delivered.done());
  } catch (const Error& e) {
    error = e.what();
  }
  sequences.finish(delivered.done());  // nothing left in flight
  EXPECT_EQ(delivered.sequences, std::vector<std::size_t>{7});
  if (!delivered.records.empty()) expect_record_of_seed(delivered.records[0], seed_of(7), schema);
  return error;
}

TEST(OverlappedSequences, AFailedForwardPassStillHandsOverTheSequenceBefore) {
  const std::string error = fail_after_one_sequence<std::runtime_error>([](ForwardObserver& observer) {
    const std::vector<float> values(fed::kKvHeads * kSeq * fed::kDim, 0.5f);
    observer.on_values(0, ValueStates{fed::kKvHeads, kSeq, fed::kDim, values.data()});
    throw std::runtime_error("out of memory in layer 0");
  });
  EXPECT_EQ(error, "out of memory in layer 0");
}

// The analysis of a sequence fails (a NaN weight) after the one before it was analysed.
TEST(OverlappedSequences, AFailedAnalysisStillHandsOverTheSequenceBefore) {
  const std::string error = fail_after_one_sequence<InputError>([](ForwardObserver& observer) {
    const std::vector<float> values(fed::kKvHeads * kSeq * fed::kDim, 0.5f);
    std::vector<float> probs(2 * kRows.size() * kSeq, std::numeric_limits<float>::quiet_NaN());
    observer.on_values(0, ValueStates{fed::kKvHeads, kSeq, fed::kDim, values.data()});
    observer.on_attention(0, AttentionRows{0, 2, kRows, kSeq, probs.data()});
    // The next layers' calls until the failure comes back: it has then been seen, as it is
    // when a long forward pass follows.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < give_up)
      observer.on_values(1, ValueStates{fed::kKvHeads, kSeq, fed::kDim, values.data()});
  });
  EXPECT_NE(error.find("nan"), std::string::npos) << error;
}

// A sequence's analysis fails after its forward pass, then the next forward pass fails too:
// the earlier failure is the one reported, and neither sequence is handed over.
TEST(OverlappedSequences, AnEarlierFailedAnalysisGoesBeforeALaterForwardError) {
  OverlappedSequences::Setup setup;
  setup.queued = true;
  const RecordSchema schema = make_record_schema(kSeq, false);  // outlives the analyzers, which keep a reference
  OverlappedSequences sequences(kConfig, schema, geometry::RowAnalysisOptions{}, setup);
  Delivered delivered;
  const std::vector<float> values(fed::kKvHeads * kSeq * fed::kDim, 0.5f);
  std::vector<float> probs(2 * kRows.size() * kSeq, std::numeric_limits<float>::quiet_NaN());
  sequences.analyze(
      7, kTokens, kRows,
      [&](ForwardObserver& observer) {
        observer.on_values(0, ValueStates{fed::kKvHeads, kSeq, fed::kDim, values.data()});
        observer.on_attention(0, AttentionRows{0, 2, kRows, kSeq, probs.data()});
      },
      delivered.done());
  const auto failing_forward = [](ForwardObserver&) {
    std::this_thread::sleep_for(std::chrono::seconds(2));  // sequence 7's analysis fails meanwhile
    throw std::runtime_error("out of memory in layer 0");
  };
  EXPECT_THROW(sequences.analyze(8, kTokens, kRows, failing_forward, delivered.done()), InputError);
  EXPECT_TRUE(delivered.sequences.empty());
}

TEST(OverlappedSequences, TheTurnsShareOnePoolOfGpuParts) {
  const RecordSchema schema = make_record_schema(kSeq, false);
  OverlappedSequences::Setup setup;
  setup.queued = true;
  setup.layer_workers = 2;
  int made = 0, fills = 0;
  setup.deviations = std::make_shared<InstancePool<LayerDeviations>>(
      [&made, &fills] {
        ++made;
        return std::make_unique<ScreenedDeviations>(&fills);
      },
      1);
  OverlappedSequences sequences(kConfig, schema, geometry::RowAnalysisOptions{}, setup);
  Delivered delivered;
  for (std::size_t i = 0; i < 3; ++i) {
    sequences.analyze(
        i, kTokens, kRows, [&](ForwardObserver& observer) { fed::feed(observer, kRows, seed_of(i)); },
        delivered.done());
  }
  sequences.finish(delivered.done());
  EXPECT_EQ(made, 1);
  EXPECT_EQ(fills, 3 * fed::kLayers * fed::kKvHeads);  // one per block of one kv group
  ASSERT_EQ(delivered.records.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) expect_record_of_seed(delivered.records[i], seed_of(i), schema);
}

}  // namespace
}  // namespace attngeom
