#include "sched/node_select.h"
