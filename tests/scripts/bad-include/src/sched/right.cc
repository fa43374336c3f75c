#include "topo/node_topology.h"
