#pragma once
#include "placer/b.h"
