// The options whose values form a closed set, as enums with their names. The
// configuration parses each one once, where the text enters (command line or
// INI file); everything downstream takes the enum. Open sets that grow as the
// project grows (models, optimisers, backends, datasets) are names checked
// against their registries instead (docs/extending.md).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <utility>

#include <boost/algorithm/string/join.hpp>
#include <boost/range/adaptor/transformed.hpp>

#include "util/error.hpp"

namespace cifar {

enum class DeviceRequest { Auto, Cpu, Cuda };
enum class Precision { Fp32, Bf16, Fp16, Auto };  // Auto: resolved at start-up (step/precision_choice.hpp)
enum class ScheduleKind { Constant, Cosine, OneCycle, Triangle, Linear };
enum class NormalizeKind { Recipe, Dataset };
enum class FlipMode { Random, Alternating };
enum class CropPadding { Zero, Reflect };
enum class TtaMode { None, Mirror, MirrorTranslate, MirrorTranslateEqual };
enum class OnNonFinite { Stop, Skip };        // a step whose averaged gradient is not finite
enum class ElasticBatch { Global, PerRank };  // what a resume at another world size keeps
enum class HeadKind { Pool3, GlobalMax };     // the speed94 models' pooling before the linear head
enum class BindNuma { Auto, Off };            // --bind-numa: bind an unbound rank to its GPU's NUMA node

// choice_names<E>(): every value of E with its option text, in --help order.
template <typename E>
struct ChoiceNames;

template <>
struct ChoiceNames<DeviceRequest> {
  static constexpr std::array<std::pair<DeviceRequest, const char*>, 3> values{
      {{DeviceRequest::Auto, "auto"}, {DeviceRequest::Cpu, "cpu"}, {DeviceRequest::Cuda, "cuda"}}};
};
template <>
struct ChoiceNames<Precision> {
  static constexpr std::array<std::pair<Precision, const char*>, 4> values{
      {{Precision::Fp32, "fp32"}, {Precision::Bf16, "bf16"}, {Precision::Fp16, "fp16"}, {Precision::Auto, "auto"}}};
};
template <>
struct ChoiceNames<ScheduleKind> {
  static constexpr std::array<std::pair<ScheduleKind, const char*>, 5> values{{{ScheduleKind::Constant, "constant"},
                                                                               {ScheduleKind::Cosine, "cosine"},
                                                                               {ScheduleKind::OneCycle, "onecycle"},
                                                                               {ScheduleKind::Triangle, "triangle"},
                                                                               {ScheduleKind::Linear, "linear"}}};
};
template <>
struct ChoiceNames<NormalizeKind> {
  static constexpr std::array<std::pair<NormalizeKind, const char*>, 2> values{
      {{NormalizeKind::Recipe, "recipe"}, {NormalizeKind::Dataset, "dataset"}}};
};

template <>
struct ChoiceNames<FlipMode> {
  static constexpr std::array<std::pair<FlipMode, const char*>, 2> values{
      {{FlipMode::Random, "random"}, {FlipMode::Alternating, "alternating"}}};
};
template <>
struct ChoiceNames<CropPadding> {
  static constexpr std::array<std::pair<CropPadding, const char*>, 2> values{
      {{CropPadding::Zero, "zero"}, {CropPadding::Reflect, "reflect"}}};
};
template <>
struct ChoiceNames<TtaMode> {
  static constexpr std::array<std::pair<TtaMode, const char*>, 4> values{
      {{TtaMode::None, "none"},
       {TtaMode::Mirror, "mirror"},
       {TtaMode::MirrorTranslate, "mirror-translate"},
       {TtaMode::MirrorTranslateEqual, "mirror-translate-equal"}}};
};
template <>
struct ChoiceNames<OnNonFinite> {
  static constexpr std::array<std::pair<OnNonFinite, const char*>, 2> values{
      {{OnNonFinite::Stop, "stop"}, {OnNonFinite::Skip, "skip"}}};
};
template <>
struct ChoiceNames<ElasticBatch> {
  static constexpr std::array<std::pair<ElasticBatch, const char*>, 2> values{
      {{ElasticBatch::Global, "global"}, {ElasticBatch::PerRank, "per-rank"}}};
};
template <>
struct ChoiceNames<HeadKind> {
  static constexpr std::array<std::pair<HeadKind, const char*>, 2> values{
      {{HeadKind::Pool3, "pool3"}, {HeadKind::GlobalMax, "global-max"}}};
};

template <>
struct ChoiceNames<BindNuma> {
  static constexpr std::array<std::pair<BindNuma, const char*>, 2> values{
      {{BindNuma::Auto, "auto"}, {BindNuma::Off, "false"}}};
};

template <typename E>
const char* to_string(E value) {
  for (const auto& [v, name] : ChoiceNames<E>::values)
    if (v == value) return name;
  return "?";
}

template <typename E>
std::optional<E> choice_from_string(const std::string& text) {
  for (const auto& [v, name] : ChoiceNames<E>::values)
    if (text == name) return v;
  return std::nullopt;
}

// "auto | cpu | cuda"
template <typename E>
std::string choice_list(const char* separator = " | ") {
  return boost::algorithm::join(ChoiceNames<E>::values | boost::adaptors::transformed([](const auto& choice) {
                                  return std::string(choice.second);
                                }),
                                separator);
}

// For programs with their own command line (tools): the value of `text`, or
// ConfigError naming `option` and the valid values.
template <typename E>
E parse_choice(const std::string& option, const std::string& text) {
  if (const auto value = choice_from_string<E>(text)) return *value;
  throw ConfigError("--" + option + ": '" + text + "' is not one of: " + choice_list<E>(", "));
}

}  // namespace cifar
