#pragma once
#include "placer/a.h"
