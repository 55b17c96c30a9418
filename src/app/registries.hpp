// The names every registry holds, gathered on the top floor for the
// configuration parser (config/registered_names.hpp), which includes none of
// the registries itself.
#pragma once

#include "config/registered_names.hpp"

namespace cifar {

RegisteredNames registered_names();

}  // namespace cifar
