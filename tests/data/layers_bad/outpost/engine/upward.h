#include "outpost/router/dispatcher.h"
