// compare_models: are two model files the same model, parameter for
// parameter? Prints the largest relative difference per tensor and exits 0
// when every one is within --rtol and every value of both models is finite;
// 1 when they differ or either holds NaN or infinity; 2 for bad arguments; 6
// when a file is missing, damaged or not a model of that architecture. Used
// by the equivalence and resume tests, and by users checking a resumed run.
//
//   compare_models A.pth B.pth [--model convnet] [--rtol 1e-5]
#include <boost/program_options.hpp>

#include <cmath>
#include <iostream>

#include "model/model.hpp"
#include "outputs/model_comparison.hpp"
#include "outputs/model_file.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace po = boost::program_options;
using namespace cifar;

namespace {

// The verdict's lines; exit code 0 (SAME) or 1.
int report(const ModelComparison& c, double rtol) {
  for (const auto& t : c.tensors) {
    if (t.finite) std::printf("%-28s max relative difference %.3g\n", t.name.c_str(), t.relative);
    else std::printf("%-28s NOT FINITE (NaN or infinity in one of the models)\n", t.name.c_str());
  }
  if (!c.finite) {
    std::printf("a model holds NaN or infinity: DIFFERENT\n");
    return 1;
  }
  std::printf("largest relative difference %.3g (rtol %.3g): %s\n", c.largest, rtol,
              c.same(rtol) ? "SAME" : "DIFFERENT");
  return c.same(rtol) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string a, b, model_name = "convnet";
  double rtol = 1e-5;
  po::options_description desc("compare_models A.pth B.pth [options]");
  desc.add_options()("help,h", "print this help")("a", po::value(&a)->required(), "first model file")(
      "b", po::value(&b)->required(), "second model file")("model", po::value(&model_name)->default_value(model_name),
                                                           "architecture of both files")(
      "rtol", po::value(&rtol)->default_value(rtol)->notifier([](double r) {
        if (!std::isfinite(r) || r < 0)
          throw po::validation_error(po::validation_error::invalid_option_value, "rtol", std::to_string(r));
      }),
      "largest allowed |a-b| / max|a| per tensor (finite, 0 or more)");
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
    return report(compare_models(*first, *second), rtol);
  } catch (const po::error& e) {
    std::cerr << "compare_models: " << e.what() << "\n" << desc;
    return kExitUsage;
  } catch (const Error& e) {
    std::cerr << "compare_models: " << e.what() << "\n";
    return e.exit_code() == kExitUsage ? kExitUsage : kExitBadInput;
  }
}
