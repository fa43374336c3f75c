#include "select/node_select.h"
