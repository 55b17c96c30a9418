// compare_models: are two model files the same model, parameter for
// parameter? Prints the largest relative difference per tensor and exits 0
// when every one is within --rtol, 1 otherwise (2 for bad arguments). Used by
// the equivalence and resume tests, and by users checking a resumed run.
//
//   compare_models A.pth B.pth [--model convnet] [--rtol 1e-5]
#include <boost/program_options.hpp>

#include <iostream>

#include "model/model.hpp"
#include "outputs/model_file.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace po = boost::program_options;
using namespace cifar;

int main(int argc, char** argv) {
  std::string a, b, model_name = "convnet";
  double rtol = 1e-5;
  po::options_description desc("compare_models A.pth B.pth [options]");
  desc.add_options()("help,h", "print this help")("a", po::value(&a)->required(), "first model file")(
      "b", po::value(&b)->required(), "second model file")("model", po::value(&model_name)->default_value(model_name),
                                                           "architecture of both files")(
      "rtol", po::value(&rtol)->default_value(rtol), "largest allowed |a-b| / max|a| per tensor");
  po::positional_options_description pos;
  pos.add("a", 1).add("b", 1);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(desc).positional(pos).run(), vm);
    if (vm.count("help")) {
      std::cout << desc;
      return 0;
    }
    po::notify(vm);
    auto first = make_model(model_name);
    auto second = make_model(model_name);
    load_state_dict(*first, a);
    load_state_dict(*second, b);
    const auto ea = state_entries(*first);
    const auto eb = state_entries(*second);
    double worst = 0;
    for (size_t i = 0; i < ea.size(); ++i) {
      const auto x = ea[i].second.to(torch::kFloat64), y = eb[i].second.to(torch::kFloat64);
      const double scale = std::max(x.abs().max().item<double>(), 1e-12);
      const double rel = (x - y).abs().max().item<double>() / scale;
      worst = std::max(worst, rel);
      std::printf("%-28s max relative difference %.3g\n", ea[i].first.c_str(), rel);
    }
    std::printf("largest relative difference %.3g (rtol %.3g): %s\n", worst, rtol,
                worst <= rtol ? "SAME" : "DIFFERENT");
    return worst <= rtol ? 0 : 1;
  } catch (const po::error& e) {
    std::cerr << "compare_models: " << e.what() << "\n" << desc;
    return 2;
  } catch (const Error& e) {
    std::cerr << "compare_models: " << e.what() << "\n";
    return e.exit_code() == kExitUsage ? 2 : 1;
  }
}
