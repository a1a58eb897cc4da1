#include <llama.h>
#include "outpost/scheduler/scheduler.h"
